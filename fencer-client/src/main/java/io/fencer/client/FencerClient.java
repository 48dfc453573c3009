package io.fencer.client;

import io.fencer.core.FencingToken;
import io.fencer.core.Ticker;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

/**
 * A connection to a Fencer group: opens sessions and reads lock state. Thread-safe; share one per process.
 * It follows the leader among its endpoints by itself.
 */
public interface FencerClient extends AutoCloseable {

    /**
     * Opens a session with lease {@code ttl} (1 s to 1 h), kept alive in the background until closed or lost.
     *
     * @throws io.fencer.core.InvalidArgumentException when the ttl is out of range
     * @throws io.fencer.core.LimitExceededException when the server holds its maximum of sessions
     */
    Session openSession(Duration ttl);

    /**
     * Describes a lock: holder, token, waiters, last token issued. Lists at most the first 1,000 waiters and shared
     * holders; {@link LockStatus#waitersTotal()} and {@link LockStatus#sharedHoldersTotal()} count them all.
     */
    LockStatus describe(String lock);

    /** Describes a semaphore: its permits, each slot's holder, its waiters (permits 0 when not in use). */
    SemaphoreStatus describeSemaphore(String semaphore);

    /**
     * Lists the first {@code limit} (1 to 1,000; 0: 1,000) locks that are held, waited for or delayed, whose names
     * start with {@code prefix}, in name order, each as {@link #describe} shows it.
     */
    default List<LockStatus> list(String prefix, int limit) {
        return list(prefix, null, limit);
    }

    /**
     * Lists, as {@link #list(String, int)}, the locks whose names sort after {@code startAfter} (null or empty: from
     * the first), so that a caller pages through every lock: a list shorter than {@code limit} is the last. The
     * service answers in pages of about 1 MiB, which this call joins; the pages are separate reads, so a lock may
     * come or go between them.
     */
    List<LockStatus> list(String prefix, String startAfter, int limit);

    /** Asks whether {@code token} is still its lock's holder, and if not, what superseded or ended it. */
    TokenStatus validate(FencingToken token);

    /**
     * Watches the events of the locks whose names start with {@code prefix}, from now on: queued, granted,
     * released, expired, wait ended, each delivered once, in log order, to {@code listener}.
     */
    default Watch watch(String prefix, WatchListener listener) {
        return watch(prefix, WatchPosition.NOW, listener);
    }

    /**
     * Watches from {@code from}: every event at or after it (use {@link WatchPosition#next()} of the last event seen
     * to resume after it). A position older than the server's history ends the watch at once with
     * {@link io.fencer.core.RevisionOutOfRangeException} in {@link WatchListener#onEnded}.
     */
    Watch watch(String prefix, WatchPosition from, WatchListener listener);

    /**
     * Revokes the exclusive grant that holds {@code lock} now: an operator takes the lock away from its holder. Needs
     * the {@code admin} permission on the lock under ACLs. The holder's session stays open but loses this grant at
     * once; the lock passes to its next waiter under a higher token (after the server's lock-delay, when one is
     * configured), so every fenced resource refuses the revoked holder once the next holder has written. The
     * server logs who revoked what; a {@link #watch} sees a RELEASED event with end cause REVOKED.
     *
     * <p>The client reads the holder's token first and revokes that grant only ({@link #revoke(FencingToken)}), so a
     * retry after a lost answer can never end the next holder's grant. A retry (the client's own, after a lost
     * answer) that finds that grant already ended, the lock free or held under a later token, returns a
     * {@link Revocation} with {@link Revocation#alreadyEnded()} true: most likely the first attempt revoked it and
     * its answer was lost, but the holder may have released it meanwhile; the lock's {@link #watch} tells which.
     *
     * @throws io.fencer.core.NotHolderException when nobody holds the lock (free, released, or in its lock-delay),
     *     naming it, on the first attempt
     * @throws io.fencer.core.InvalidArgumentException when the name is invalid, the lock is held in shared mode, or
     *     the group's format level is below 5 (a peer of the previous release may still run)
     * @throws io.fencer.core.PermissionDeniedException without the {@code admin} permission on the lock
     */
    Revocation revoke(String lock);

    /**
     * Revokes the grant {@code token} if it still holds its lock (see {@link #revoke(String)}, also for a retry
     * after a lost answer).
     *
     * @throws io.fencer.core.NotHolderException when {@code token} no longer holds its lock, naming the holder
     */
    Revocation revoke(FencingToken token);

    /**
     * Returns the status of the peer this client reaches (any peer answers; not linearizable). Needs {@code read}
     * permission on some name under ACLs.
     */
    ServerStatus status();

    /**
     * Takes a backup of the group's lock state on the leader: the bytes of the file {@code fencer restore} reads (a
     * head, the state, a SHA-256). Needs the {@code admin} permission on every name under ACLs. A group restored from
     * it grants every token above every token this group ever granted (see admin.proto).
     *
     * @throws io.fencer.core.PermissionDeniedException without the {@code admin} permission
     */
    byte[] backup();

    /**
     * Returns the group's peers and their changes at run time ({@code fencer.v1.Peers}); listing needs {@code read}
     * on the whole namespace under an ACL, changes {@code admin}.
     */
    GroupPeers peers();

    /**
     * Closes the connections; sessions opened through this client are closed first, each asking the service to end
     * it (its locks are freed at once). When the service cannot be reached, this waits at most one call timeout in
     * all, then stops asking: the remaining sessions end when their ttl runs out.
     */
    @Override
    void close();

    /** Settings of a client. */
    interface Builder {
        /** The peers' client addresses, {@code host:port}; at least one. */
        Builder endpoints(String... endpoints);

        /**
         * How long one call may take, retries on other endpoints included (default 10 s): each attempt on one
         * endpoint gets at most a third of it (at least 1 s) before the call moves on, and when it is spent the call
         * fails with {@link io.fencer.core.UnavailableException}. An acquire gets its wait on top of it. A call that a
         * peer answers NOT_LEADER follows the leader it names at once, and from the first such answer keeps trying
         * through the election for at least 3 s (two election timeouts, the vote and the new leader's first commit),
         * even when that outlasts this timeout.
         */
        Builder callTimeout(Duration timeout);

        /**
         * How long a call keeps retrying while no server has ever answered this client and every endpoint refuses
         * the connection or names an unknown host (default: the call timeout, at most). Then the call fails with an
         * {@link io.fencer.core.UnavailableException} naming the endpoints and why, having sent nothing. Once a
         * server has answered, refusals count as a peer restarting or failing over and get the whole call timeout.
         * Whichever timeout ends a call whose every attempt was refused (or ended before any connection was made),
         * its exception says that nothing was sent.
         * The {@code fencer} command sets a second, so that a mistyped address or a server not started fails fast.
         */
        Builder unreachableTimeout(Duration timeout);

        /** The time source for keepalives and lease accounting (default {@link Ticker#system()}). */
        Builder ticker(Ticker ticker);

        /**
         * Connects with TLS (default: plaintext), trusting the servers whose certificates {@code caFile} issued;
         * each server's certificate must name the host of its endpoint (a DNS name or IP address among its subject
         * alternative names). Give a client certificate and its key when the servers require one ({@code fencer
         * server --tls-ca}): its CN is the identity the servers know this client by, in ACLs and in what
         * {@code Describe} shows.
         *
         * @param caFile PEM: the CA certificate(s) the servers' certificates chain to
         * @param certificateFile PEM: this client's certificate (then its chain), or null for none
         * @param keyFile PEM, unencrypted PKCS#8 ({@code BEGIN PRIVATE KEY}): the certificate's key, or null for none
         * @throws IllegalArgumentException naming the file when one is missing or unreadable, or when only one of
         *     certificate and key is given; {@link #build()} throws it when a file does not hold what it should
         */
        Builder tls(Path caFile, Path certificateFile, Path keyFile);

        /** Connects with TLS trusting {@code caFile}, without a client certificate (see the three-file form). */
        default Builder tls(Path caFile) {
            return tls(caFile, null, null);
        }

        /**
         * Whether {@code acquire} and {@code release} travel as messages of one long-lived {@code Pipeline} stream
         * per endpoint (true, the default) or as a unary call each (false). The stream costs client and server far
         * less CPU per call; turn it off to compare the two, or to get past a proxy that mishandles long-lived
         * streams. Either way retries, leader-following and errors are the same, and against a server without the
         * stream the client falls back to unary calls by itself. The default can also be turned off for a whole JVM
         * with the system property {@code fencer.client.pipeline=false}.
         */
        Builder pipelining(boolean pipelining);

        FencerClient build();
    }
}
