package io.fencer.client.internal;

import io.fencer.api.v1.AcquireRequest;
import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.client.FencedLock;
import io.fencer.client.Grant;
import io.fencer.client.LockTimeoutException;
import io.fencer.core.FencingToken;
import io.fencer.core.InternalException;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LockMode;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * A named lock acquired through one session. Every acquire is one logical call with one request id, reused by
 * every retry, so a retry after a lost answer gets the same grant or the same place in the queue. Thread-safe.
 */
final class DefaultFencedLock implements FencedLock {
    /** The longest wait, as the protocol bounds {@code wait_millis}. */
    static final long WAIT_MILLIS_MAX = 3_600_000;
    private static final Duration WAIT_MAX = Duration.ofMillis(WAIT_MILLIS_MAX);

    private final DefaultSession session;
    private final String name;
    /** What calls are named in errors, made once rather than per acquire. */
    private final String operation;

    DefaultFencedLock(DefaultSession session, String name) {
        this.session = session;
        this.name = name;
        this.operation = "Acquire " + name;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public Grant acquire(Duration wait) {
        long waitMillis = checkWait(wait);
        return acquire(waitMillis, LockMode.EXCLUSIVE).orElseThrow(() -> new LockTimeoutException(name, wait));
    }

    @Override
    public Optional<Grant> tryAcquire() {
        return acquire(0, LockMode.EXCLUSIVE);
    }

    @Override
    public Grant acquireShared(Duration wait) {
        long waitMillis = checkWait(wait);
        return acquire(waitMillis, LockMode.SHARED).orElseThrow(() -> new LockTimeoutException(name, wait));
    }

    @Override
    public Optional<Grant> tryAcquireShared() {
        return acquire(0, LockMode.SHARED);
    }

    static long checkWait(Duration wait) {
        Objects.requireNonNull(wait, "wait");
        if (wait.isNegative() || wait.compareTo(WAIT_MAX) > 0) {
            throw new InvalidArgumentException("wait", wait.toString(), "wait must be between 0 and waitMillisMax "
                    + WAIT_MILLIS_MAX + " ms, got " + wait.toMillis() + " ms");
        }
        return wait.toMillis();
    }

    /** Acquires in {@code mode}, as {@link WaitingAcquire} calls: one request id, retried within the wait. */
    private Optional<Grant> acquire(long waitMillis, LockMode mode) {
        session.checkAlive();
        String requestId = session.client().requestIds().next();
        AcquireRequest.Builder request = AcquireRequest.newBuilder()
                .setSessionId(session.id()).setSessionSecret(session.secret()).setLock(name).setRequestId(requestId);
        if (mode == LockMode.SHARED) {
            request.setMode(io.fencer.api.v1.LockMode.LOCK_MODE_SHARED);
        }
        AcquireResponse response = WaitingAcquire.call(session, operation, waitMillis, LocksGrpc.getAcquireMethod(),
                millis -> request.setWaitMillis(millis).build());
        if (!response.getAcquired()) {
            return Optional.empty();
        }
        FencingToken token = Protos.token(response.getToken());
        if (!token.lock().equals(name)) {
            throw new InternalException("Acquire of lock '" + name + "' was answered with a token of another lock: "
                    + token);
        }
        if (token.mode() != mode) {
            // A server before read-write locks ignores the mode and grants exclusively: say so, never pretend.
            throw new InternalException("Acquire of lock '" + name + "' in " + mode.text() + " mode was answered"
                    + " with a " + token.mode().text() + " grant " + token + " (a server before read-write locks?)");
        }
        return Optional.of(new DefaultGrant(session, token, Protos.sequencer(response.getToken(), token)));
    }

    @Override
    public String toString() {
        return "FencedLock[" + name + ", session " + session.id() + "]";
    }
}
