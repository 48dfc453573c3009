package io.fencer.client;

import io.fencer.core.FencePolicy;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * A client of Fencer's fenced key-value store (service {@code fencer.v1.Store}): the resource that refuses stale
 * tokens. Obtain one with {@link Fencer#store(String)} or {@link Fencer#newStoreBuilder()}; thread-safe, share one
 * per process and close it when done.
 *
 * <p>Keys live in scopes; a scope is bound to one lock (by default the lock of its own name) and keeps, durably,
 * the highest token it has accepted. Every write carries the sequencer of a grant of that lock, and the store
 * compares it in the same atomic step as the write. That is what protects the data from a paused holder:
 *
 * <pre>
 *   client A  acquire -> orders#31 ....[ GC pause ]...................... put(orders#31)  StaleWriteException
 *   service                      lease of A expires; grant B orders#32
 *   client B                                     acquire -> orders#32, put(orders#32) accepted
 *   store                                        accepted = 32 ..................... 31 &lt; 32: refused
 * </pre>
 *
 * <pre>{@code
 * try (FencerClient fencer = Fencer.connect("127.0.0.1:7070");
 *      FencedStore store = Fencer.newStoreBuilder().endpoint("127.0.0.1:7070").lockService(fencer).build();
 *      Session session = fencer.openSession(Duration.ofSeconds(10))) {
 *     try (Grant grant = session.lock("orders").acquire(Duration.ofSeconds(30))) {
 *         store.put("orders", "order-17", "paid", grant);
 *     } catch (StaleWriteException e) {   // diagnose() asks the lock service, so while the client is open
 *         log.warn("{}: {}", e.getMessage(), e.diagnose());   // superseded by which token, or a real inconsistency
 *     }
 * }
 * }</pre>
 *
 * <p>Errors are the typed exceptions of {@code io.fencer.core}: {@link StaleWriteException} for a refused token,
 * {@link io.fencer.core.ScopeMismatchException} for a token of another lock,
 * {@link io.fencer.core.BadTokenSignatureException} when the store requires signed tokens,
 * {@link io.fencer.core.IdempotencyMismatchException} when an idempotency key and token are reused with other ops,
 * {@link io.fencer.core.InvalidArgumentException} and {@link io.fencer.core.LimitExceededException} for requests
 * beyond the store's limits, and {@link io.fencer.core.UnavailableException} when the store cannot be reached.
 *
 * <p>Retries: reads, {@link #fence}, {@link #createScope}, unit commits and aborts are retried on UNAVAILABLE
 * within the call timeout. A {@link #write write} is retried only when it carries an idempotency key (the store
 * then answers a retry with the first result); without one, a write whose answer was lost fails with
 * {@link io.fencer.core.UnavailableException} saying it may or may not have been applied.
 *
 * <p>String keys and values are encoded as UTF-8.
 */
public interface FencedStore extends AutoCloseable {

    /** Puts {@code value} at {@code key} of {@code scope} under the token in {@code sequencer}; see {@link #write}. */
    WriteReceipt put(String scope, byte[] key, byte[] value, String sequencer);

    /** Puts a UTF-8 {@code value} at a UTF-8 {@code key}; see {@link #write}. */
    default WriteReceipt put(String scope, String key, String value, String sequencer) {
        return put(scope, utf8(key), utf8(value), sequencer);
    }

    /** Puts a UTF-8 {@code value} at a UTF-8 {@code key} under {@code grant}'s sequencer; see {@link #write}. */
    default WriteReceipt put(String scope, String key, String value, Grant grant) {
        return put(scope, utf8(key), utf8(value), grant.sequencer());
    }

    /** Deletes {@code key} of {@code scope} under the token in {@code sequencer}; see {@link #write}. */
    WriteReceipt delete(String scope, byte[] key, String sequencer);

    /** Deletes a UTF-8 {@code key}; see {@link #write}. */
    default WriteReceipt delete(String scope, String key, String sequencer) {
        return delete(scope, utf8(key), sequencer);
    }

    /** Deletes a UTF-8 {@code key} under {@code grant}'s sequencer; see {@link #write}. */
    default WriteReceipt delete(String scope, String key, Grant grant) {
        return delete(scope, utf8(key), grant.sequencer());
    }

    /**
     * Applies {@code ops} to {@code scope}, all or nothing, if the scope admits the token in {@code sequencer};
     * returns once the store has written them with fsync.
     *
     * @param sequencer the grant's wire form ({@link Grant#sequencer()})
     * @param ops 1 or more ops (the store's limit is 1,000 by default)
     * @param idempotencyKey null for none; otherwise a name for this write within the scope: the write is retried
     *     when its answer is lost, and the store answers a retry with the same key, a still-admitted token and the
     *     same ops with the first result ({@link WriteReceipt#replayed()}) without applying it twice
     * @throws StaleWriteException when the scope has accepted a newer token; nothing was applied (unless
     *     {@link StaleWriteException#retried()}: then an earlier attempt may have been)
     * @throws io.fencer.core.IdempotencyMismatchException when the key was first used with this token for other
     *     ops: that first write stands and nothing of this one was applied; a new write needs a new key
     * @throws io.fencer.core.UnavailableException when the store did not answer within the call timeout; the
     *     write may or may not have been applied
     * @throws io.fencer.core.InvalidArgumentException when the sequencer is malformed (checked before sending)
     */
    WriteReceipt write(String scope, String sequencer, List<StoreOp> ops, String idempotencyKey);

    /** Applies {@code ops} under {@code grant}'s sequencer; see {@link #write(String, String, List, String)}. */
    default WriteReceipt write(String scope, Grant grant, List<StoreOp> ops, String idempotencyKey) {
        return write(scope, grant.sequencer(), ops, idempotencyKey);
    }

    /** Reads {@code key} of {@code scope}, unfenced: the value, the token that wrote it, the accepted token. */
    StoreValue get(String scope, byte[] key);

    /** Reads a UTF-8 {@code key}, unfenced; see {@link #get(String, byte[])}. */
    default StoreValue get(String scope, String key) {
        return get(scope, utf8(key));
    }

    /**
     * Reads {@code key} of {@code scope}, fenced by the token in {@code sequencer}: a token below the scope's
     * accepted one is refused, so a paused holder learns it is stale on reads too. The read changes no fence.
     *
     * @throws StaleWriteException when the scope has accepted a newer token
     */
    StoreValue get(String scope, byte[] key, String sequencer);

    /** Reads a UTF-8 {@code key}, fenced; see {@link #get(String, byte[], String)}. */
    default StoreValue get(String scope, String key, String sequencer) {
        return get(scope, utf8(key), sequencer);
    }

    /** Reads a UTF-8 {@code key}, fenced by {@code grant}'s sequencer; see {@link #get(String, byte[], String)}. */
    default StoreValue get(String scope, String key, Grant grant) {
        return get(scope, utf8(key), grant.sequencer());
    }

    /** Returns the scope's state: its lock, policy, accepted token and revision ({@code exists=false} if new). */
    ScopeInfo fence(String scope);

    /**
     * Creates {@code scope} with {@code policy}, bound to the lock of the grant whose sequencer is {@code sequencer},
     * before its first write; idempotent for the same binding. Without it, the first write binds a scope to the lock
     * of its own name, policy AT_LEAST. Only a lock's current holder may bind a scope to it (the store checks the
     * grant is current, or its signature on a standalone store), and a lock other than the scope's own name needs
     * {@code admin} on the scope in the store's ACL file: a store without one refuses it.
     *
     * @param sequencer the sequencer of a current exclusive grant of the lock to bind ({@link Grant#sequencer()})
     * @throws io.fencer.core.InvalidArgumentException when the scope exists with another binding, or its name holds
     *     a character new names may not hold
     * @throws io.fencer.core.NotHolderException when the grant is not the lock's current one
     * @throws io.fencer.core.PermissionDeniedException when the lock is not the scope's own name and the store has
     *     no ACL (or the ACL grants no {@code admin} on the scope)
     */
    ScopeInfo createScope(String scope, FencePolicy policy, String sequencer);

    /**
     * Creates {@code scope} bound to {@code grant}'s lock; see {@link #createScope(String, FencePolicy, String)}.
     */
    default ScopeInfo createScope(String scope, FencePolicy policy, Grant grant) {
        return createScope(scope, policy, grant.sequencer());
    }

    /**
     * Begins a unit: work spanning several requests, checked once now and applied all or nothing at
     * {@link StoreUnit#commit()}. The scope's accepted token is raised to this token now, and the unit holds the
     * scope until it commits, aborts, passes {@code timeout}, or is preempted by a higher token.
     *
     * @param timeout how long the unit may stay open (the store allows up to 60 s by default)
     * @throws StaleWriteException when the scope has accepted a newer token
     * @throws io.fencer.core.UnavailableException when the answer was lost: a unit may have begun; the store
     *     aborts it after {@code timeout}
     */
    StoreUnit beginUnit(String scope, String sequencer, Duration timeout);

    /** Begins a unit under {@code grant}'s sequencer; see {@link #beginUnit(String, String, Duration)}. */
    default StoreUnit beginUnit(String scope, Grant grant, Duration timeout) {
        return beginUnit(scope, grant.sequencer(), timeout);
    }

    /**
     * Takes a backup of the whole store: writes to {@code out} the bytes of the file {@code fencer store restore}
     * reads (every scope's fence, every key, every idempotency record, from one snapshot of the store; a head and a
     * SHA-256), as they arrive, and returns how many it wrote. Needs {@code admin} on every scope under ACLs. The
     * caller keeps the file only once it is whole and checked ({@code io.fencer.store.StoreBackupFile.verify}):
     * a call that fails leaves a partial copy in {@code out}. Not retried.
     *
     * @param timeout how long the whole backup may take
     * @throws io.fencer.core.PermissionDeniedException without the {@code admin} permission
     * @throws java.io.UncheckedIOException when writing to {@code out} fails
     */
    long backup(java.io.OutputStream out, Duration timeout);

    /**
     * Imports whole scopes, for {@code fencer store import} and other operators' tools (applications write through
     * {@link #write}): {@code request} is an encoded {@code fencer.v1.ImportScopesRequest} and the answer an encoded
     * {@code fencer.v1.ImportScopesResponse}; the wire contract ({@code store.proto}) states both. Bytes, not the
     * generated classes, so that this API carries no generated code. Needs {@code admin} on every scope under ACLs.
     * Retried as idempotent: a scope already imported identically is skipped, never imported twice.
     *
     * @throws IllegalArgumentException when {@code request} does not decode
     * @throws io.fencer.core.PermissionDeniedException without the {@code admin} permission
     */
    byte[] importScopes(byte[] request);

    /** Closes the connection. A lock service client given to the builder stays open: its owner closes it. */
    @Override
    void close();

    /** Returns the UTF-8 bytes of {@code text}. */
    private static byte[] utf8(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    /** Settings of a store client. */
    interface Builder {
        /**
         * The store's address, {@code host:port}: a {@code fencer store-server}, or a {@code fencer server} that
         * hosts the store beside the lock service (its client port); or, for the replicated store of a group of
         * peers, their client addresses as a comma-separated list ({@code host:port,host:port,...}, at most 16), of
         * which the client follows the leader as the lock client does.
         */
        Builder endpoint(String endpoint);

        /**
         * The lock service that issued the tokens, for {@link StaleWriteException#diagnose()}; without it a
         * diagnosis is {@link StaleDiagnosis.Kind#UNKNOWN}. The store client does not close it.
         */
        Builder lockService(FencerClient lockService);

        /**
         * How long one call may take, retries included (default 10 s); each attempt of a retried call gets at most
         * a third of it (at least 1 s).
         */
        Builder callTimeout(Duration timeout);

        /**
         * How long a call keeps retrying while the store has never answered this client and refuses the connection
         * or names an unknown host (default: the call timeout, at most), as
         * {@link FencerClient.Builder#unreachableTimeout(Duration)} describes.
         */
        Builder unreachableTimeout(Duration timeout);

        /**
         * Connects with TLS (default: plaintext), as {@link FencerClient.Builder#tls(Path, Path, Path)} describes:
         * trusting {@code caFile}, presenting {@code certificateFile} and {@code keyFile} when not null.
         */
        Builder tls(Path caFile, Path certificateFile, Path keyFile);

        /** Connects with TLS trusting {@code caFile}, without a client certificate. */
        default Builder tls(Path caFile) {
            return tls(caFile, null, null);
        }

        /**
         * Whether the store's {@code Write} and {@code Get} travel on one long-lived {@code Pipeline} stream (true,
         * the default) or as a unary call each (false), as {@link FencerClient.Builder#pipelining(boolean)} describes.
         */
        Builder pipelining(boolean pipelining);

        FencedStore build();
    }
}
