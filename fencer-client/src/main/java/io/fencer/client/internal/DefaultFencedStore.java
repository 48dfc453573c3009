package io.fencer.client.internal;

import com.google.protobuf.ByteString;
import io.fencer.api.v1.AbortUnitRequest;
import io.fencer.api.v1.BeginUnitRequest;
import io.fencer.api.v1.BeginUnitResponse;
import io.fencer.api.v1.CommitUnitRequest;
import io.fencer.api.v1.CreateScopeRequest;
import io.fencer.api.v1.FenceRequest;
import io.fencer.api.v1.GetRequest;
import io.fencer.api.v1.StoreBackupChunk;
import io.fencer.api.v1.StoreBackupRequest;
import io.fencer.api.v1.UnitWriteRequest;
import io.fencer.api.v1.WriteRequest;
import io.fencer.api.v1.WriteResponse;
import io.fencer.client.FencedStore;
import io.fencer.client.FencerClient;
import io.fencer.client.ScopeInfo;
import io.fencer.client.StaleWriteException;
import io.fencer.client.StoreOp;
import io.fencer.client.StoreUnit;
import io.fencer.client.StoreValue;
import io.fencer.client.WriteReceipt;
import io.fencer.core.FencePolicy;
import io.fencer.core.FencingToken;
import io.fencer.core.InternalException;
import io.fencer.core.LockNames;
import io.fencer.core.Sequencer;
import io.fencer.core.StaleTokenException;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.Iterator;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The gRPC implementation of {@link FencedStore}: one {@link StoreConnection}, and the lock service (if given)
 * that stale refusals are diagnosed with. Sequencers are parsed here before sending, so a malformed one fails at
 * once and a refusal can name the token's lock. Not public API: obtain one through {@link io.fencer.client.Fencer}.
 */
public final class DefaultFencedStore implements FencedStore {
    /** The longest unit timeout the protocol allows ({@code BeginUnitRequest.timeout_millis}). */
    static final Duration UNIT_TIMEOUT_MAX = Duration.ofMillis(60_000);

    private final StoreConnection connection;
    /** Follows the group's membership: a replicated store is served by whichever peers the group has now. */
    private final PeerDirectory peerDirectory;
    private final FencerClient lockService;
    private final AtomicBoolean closed = new AtomicBoolean();

    DefaultFencedStore(String endpoint, Duration callTimeout, Duration unreachableTimeout, FencerClient lockService,
            ClientTransport transport, boolean pipelining) {
        Duration refreshInterval = PeerDirectory.refreshIntervalOfProperty(); // a bad value fails before any channel
        this.connection = new StoreConnection(endpoint, callTimeout.toNanos(), unreachableTimeout.toNanos(),
                transport, pipelining);
        this.peerDirectory = new PeerDirectory(connection, refreshInterval);
        this.lockService = lockService;
        peerDirectory.start();
    }

    /** Returns a builder of store clients; the hook behind {@link io.fencer.client.Fencer#newStoreBuilder()}. */
    public static FencedStore.Builder newBuilder() {
        return new StoreBuilder();
    }

    @Override
    public WriteReceipt put(String scope, byte[] key, byte[] value, String sequencer) {
        return write(scope, sequencer, List.of(StoreOp.put(key, value)), null);
    }

    @Override
    public WriteReceipt delete(String scope, byte[] key, String sequencer) {
        return write(scope, sequencer, List.of(StoreOp.delete(key)), null);
    }

    @Override
    public WriteReceipt write(String scope, String sequencer, List<StoreOp> ops, String idempotencyKey) {
        LockNames.check("scope", scope);
        FencingToken token = Sequencer.parse(sequencer);
        Objects.requireNonNull(ops, "ops");
        if (ops.isEmpty()) {
            throw new IllegalArgumentException("a write to scope '" + scope + "' needs at least one op");
        }
        checkOpen();
        boolean idempotent = idempotencyKey != null && !idempotencyKey.isEmpty();
        WriteRequest request = WriteRequest.newBuilder().setScope(scope).setSequencer(sequencer)
                .addAllOps(StoreProtos.ops(ops)).setIdempotencyKey(idempotent ? idempotencyKey : "").build();
        int[] attempts = {0};
        WriteResponse response;
        try {
            response = connection.call("Write to scope '" + scope + "' with " + token,
                    idempotent ? StoreConnection.Retry.IDEMPOTENT : StoreConnection.Retry.ONCE, attempts,
                    calls -> calls.write(request));
        } catch (StaleTokenException e) {
            throw stale(e, token, attempts[0] > 1);
        }
        checkAnswer(scope, token, response);
        return StoreProtos.receipt(response);
    }

    /** Checks the store's answer against the request: a store that breaks the contract is a bug to report. */
    private static void checkAnswer(String scope, FencingToken token, WriteResponse response) {
        if (response.getToken() != token.value() || response.getAccepted() < token.value()) {
            throw new InternalException("the store answered a write to scope '" + scope + "' with " + token
                    + " naming token " + response.getToken() + " and accepted " + response.getAccepted());
        }
    }

    @Override
    public long backup(OutputStream out, Duration timeout) {
        Objects.requireNonNull(out, "out");
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("a backup's timeout must be positive: " + timeout);
        }
        checkOpen();
        return connection.call("Backup", StoreConnection.Retry.ONCE, null, calls -> {
            Iterator<StoreBackupChunk> chunks = calls.unlimited().withDeadlineAfter(timeout.toNanos(),
                    TimeUnit.NANOSECONDS).backup(StoreBackupRequest.getDefaultInstance());
            long written = 0;
            try {
                while (chunks.hasNext()) {
                    ByteString data = chunks.next().getData();
                    data.writeTo(out);
                    written += data.size();
                }
                out.flush();
            } catch (IOException e) {
                throw new UncheckedIOException("writing the store's backup failed after " + written + " bytes", e);
            }
            return written;
        });
    }

    @Override
    public byte[] importScopes(byte[] request) {
        Objects.requireNonNull(request, "request");
        io.fencer.api.v1.ImportScopesRequest decoded;
        try {
            decoded = io.fencer.api.v1.ImportScopesRequest.parseFrom(request);
        } catch (com.google.protobuf.InvalidProtocolBufferException e) {
            throw new IllegalArgumentException("the import request (" + request.length + " bytes) does not decode as"
                    + " an ImportScopesRequest: " + e.getMessage(), e);
        }
        checkOpen();
        return connection.call("ImportScopes of " + decoded.getScopesCount() + " scopes",
                StoreConnection.Retry.IDEMPOTENT, null, calls -> calls.stub().importScopes(decoded)).toByteArray();
    }

    @Override
    public StoreValue get(String scope, byte[] key) {
        return get(scope, key, null, null);
    }

    @Override
    public StoreValue get(String scope, byte[] key, String sequencer) {
        Objects.requireNonNull(sequencer, "sequencer");
        return get(scope, key, sequencer, Sequencer.parse(sequencer));
    }

    private StoreValue get(String scope, byte[] key, String sequencer, FencingToken token) {
        LockNames.check("scope", scope);
        Objects.requireNonNull(key, "key");
        checkOpen();
        GetRequest request = GetRequest.newBuilder().setScope(scope).setKey(ByteString.copyFrom(key))
                .setSequencer(sequencer == null ? "" : sequencer).build();
        try {
            return StoreProtos.value(scope, connection.call("Get from scope '" + scope + "'",
                    StoreConnection.Retry.READ, null, calls -> calls.get(request)));
        } catch (StaleTokenException e) {
            throw stale(e, token, false);
        }
    }

    @Override
    public ScopeInfo fence(String scope) {
        LockNames.check("scope", scope);
        checkOpen();
        FenceRequest request = FenceRequest.newBuilder().setScope(scope).build();
        return StoreProtos.scopeInfo(connection.call("Fence of scope '" + scope + "'",
                StoreConnection.Retry.READ, null, calls -> calls.stub().fence(request)));
    }

    @Override
    public ScopeInfo createScope(String scope, FencePolicy policy, String sequencer) {
        LockNames.check("scope", scope);
        Objects.requireNonNull(policy, "policy");
        FencingToken token = Sequencer.parse(sequencer);
        checkOpen();
        CreateScopeRequest request = CreateScopeRequest.newBuilder().setScope(scope).setLock(token.lock())
                .setPolicy(StoreProtos.toProto(policy)).setSequencer(sequencer).build();
        return StoreProtos.scopeInfo(connection.call("CreateScope '" + scope + "'",
                StoreConnection.Retry.IDEMPOTENT, null, calls -> calls.stub().createScope(request)));
    }

    @Override
    public StoreUnit beginUnit(String scope, String sequencer, Duration timeout) {
        LockNames.check("scope", scope);
        FencingToken token = Sequencer.parse(sequencer);
        Objects.requireNonNull(timeout, "timeout");
        if (timeout.compareTo(Duration.ofMillis(1)) < 0 || timeout.compareTo(UNIT_TIMEOUT_MAX) > 0) {
            throw new IllegalArgumentException("unit timeout must be between 1 ms and " + UNIT_TIMEOUT_MAX.toMillis()
                    + " ms, got " + timeout);
        }
        checkOpen();
        BeginUnitRequest request = BeginUnitRequest.newBuilder().setScope(scope).setSequencer(sequencer)
                .setTimeoutMillis(timeout.toMillis()).build();
        BeginUnitResponse response;
        try {
            // Not retried: a retry after a lost answer would find the first unit holding the scope.
            response = connection.call("BeginUnit on scope '" + scope + "' with " + token,
                    StoreConnection.Retry.ONCE, null, calls -> calls.stub().beginUnit(request));
        } catch (StaleTokenException e) {
            throw stale(e, token, false);
        }
        if (response.getUnitId().isEmpty()) {
            throw new InternalException("the store began a unit on scope '" + scope + "' without an id");
        }
        return new DefaultStoreUnit(this, response.getUnitId(), scope, token);
    }

    /** Buffers {@code op} in unit {@code unitId}; not retried (a retry could buffer it twice). */
    void unitWrite(DefaultStoreUnit unit, StoreOp op) {
        checkOpen();
        UnitWriteRequest request = UnitWriteRequest.newBuilder().setUnitId(unit.id()).addOps(StoreProtos.op(op))
                .build();
        try {
            connection.call("UnitWrite to unit " + unit.id(), StoreConnection.Retry.ONCE, null,
                    calls -> calls.stub().unitWrite(request));
        } catch (StaleTokenException e) {
            throw stale(e, unit.token(), false);
        }
    }

    WriteReceipt commitUnit(DefaultStoreUnit unit) {
        checkOpen();
        CommitUnitRequest request = CommitUnitRequest.newBuilder().setUnitId(unit.id()).build();
        WriteResponse response;
        try {
            response = connection.call("CommitUnit " + unit.id(), StoreConnection.Retry.IDEMPOTENT, null,
                    calls -> calls.stub().commitUnit(request));
        } catch (StaleTokenException e) {
            throw stale(e, unit.token(), false);
        }
        checkAnswer(unit.scope(), unit.token(), response);
        return StoreProtos.receipt(response);
    }

    void abortUnit(DefaultStoreUnit unit) {
        checkOpen();
        AbortUnitRequest request = AbortUnitRequest.newBuilder().setUnitId(unit.id()).build();
        connection.call("AbortUnit " + unit.id(), StoreConnection.Retry.IDEMPOTENT, null,
                calls -> calls.stub().abortUnit(request));
    }

    private StaleWriteException stale(StaleTokenException refusal, FencingToken token, boolean retried) {
        if (refusal.presented() != token.value()) {
            // The store named another token than the one sent: report its words, not a misleading diagnosis.
            throw new InternalException("the store refused " + token + " naming token " + refusal.presented()
                    + ": " + refusal.getMessage());
        }
        return new StaleWriteException(refusal, token, retried, lockService);
    }

    /** Returns the connection, for tests of its endpoints. */
    StoreConnection connection() {
        return connection;
    }

    private void checkOpen() {
        if (closed.get()) {
            throw new IllegalStateException("the FencedStore is closed");
        }
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            peerDirectory.close();
            connection.close();
        }
    }

    @Override
    public String toString() {
        return "FencedStore[" + connection.endpoint() + (closed.get() ? ", closed" : "") + "]";
    }
}
