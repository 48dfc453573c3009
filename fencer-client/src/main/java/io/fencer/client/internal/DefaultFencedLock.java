package io.fencer.client.internal;

import static java.util.concurrent.TimeUnit.MILLISECONDS;

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
import io.fencer.core.UnavailableException;
import java.time.Duration;
import java.util.List;
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
    /**
     * How many answers with a grant this session is releasing an acquire takes before it gives up: each is followed
     * by the release made again and waited for, so a second one means that release was lost again (a restart).
     */
    static final int RELEASED_GRANT_ROUNDS_MAX = 3;

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

    /**
     * Acquires in {@code mode}, as {@link WaitingAcquire} calls: one request id, retried within the wait. An answer
     * with a grant this session is still releasing ({@link DefaultSession#releasedAlready}) is not handed out: the
     * release of that grant is made again, waiting for it, and the lock asked for anew with what is left of the wait.
     */
    private Optional<Grant> acquire(long waitMillis, LockMode mode) {
        long deadlineNanos = System.nanoTime() + MILLISECONDS.toNanos(waitMillis);
        for (int round = 1; ; round++) {
            session.checkAlive();
            long leftMillis = round == 1 ? waitMillis : WaitingAcquire.leftMillis(waitMillis, deadlineNanos);
            Optional<Answer> token = ask(leftMillis, mode);
            if (token.isEmpty()) {
                return Optional.empty();
            }
            List<DefaultGrant> made = session.handOut(List.of(token.get().token()), List.of(token.get().sequencer()));
            if (made != null) {
                session.checkHandOut(made);
                session.provisionalGrants().handedOut(token.get().token(), token.get().response());
                return Optional.of(made.get(0));
            }
            if (round == RELEASED_GRANT_ROUNDS_MAX) {
                throw new UnavailableException("Acquire of lock '" + name + "' was answered " + round + " times with"
                        + " grant " + token.get().token() + ", which this session released: the release has not"
                        + " taken effect yet");
            }
            session.releaseAgain(token.get().token());
        }
    }

    /**
     * One Acquire call with a request id of its own; the token and its wire form, or empty when not granted. A wait
     * for the lock in exclusive mode asks to be answered before the grant is durable while the session can keep one
     * more such grant provisional ({@link ProvisionalGrants}); the request goes out so on the pipeline and unary alike.
     */
    private Optional<Answer> ask(long waitMillis, LockMode mode) {
        String requestId = session.client().requestIds().next();
        AcquireRequest.Builder request = AcquireRequest.newBuilder()
                .setSessionId(session.id()).setSessionSecret(session.secret()).setLock(name).setRequestId(requestId);
        if (mode == LockMode.SHARED) {
            request.setMode(io.fencer.api.v1.LockMode.LOCK_MODE_SHARED);
        } else if (waitMillis > 0) {
            request.setAnswerBeforeDurable(session.provisionalGrants().hasRoom());
        }
        AcquireResponse response = WaitingAcquire.call(session, operation, List.of(name), waitMillis,
                LocksGrpc.getAcquireMethod(), millis -> request.setWaitMillis(millis).build());
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
        return Optional.of(new Answer(token, Protos.sequencer(response.getToken(), token), response));
    }

    /** A granted answer: its token, the wire form the service sent with it, and the answer itself. */
    record Answer(FencingToken token, String sequencer, AcquireResponse response) {}

    @Override
    public String toString() {
        return "FencedLock[" + name + ", session " + session.id() + "]";
    }
}
