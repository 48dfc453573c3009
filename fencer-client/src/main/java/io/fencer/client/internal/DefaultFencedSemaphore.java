package io.fencer.client.internal;

import static java.util.concurrent.TimeUnit.MILLISECONDS;

import io.fencer.api.v1.AcquirePermitRequest;
import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.client.FencedSemaphore;
import io.fencer.client.GrantLoss;
import io.fencer.client.LockTimeoutException;
import io.fencer.core.FencingToken;
import io.fencer.core.InternalException;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.UnavailableException;
import io.fencer.core.internal.PermitSlots;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletionStage;

/**
 * A semaphore acquired through one session. Every acquire is one logical call with one request id, reused by every
 * retry, as for {@link DefaultFencedLock}. Thread-safe.
 */
final class DefaultFencedSemaphore implements FencedSemaphore {
    /** The most permits a semaphore may have, as the service bounds them. */
    static final int PERMITS_MAX = 1_000;

    private final DefaultSession session;
    private final String name;
    private final int permits;
    private final String operation;

    DefaultFencedSemaphore(DefaultSession session, String name, int permits) {
        if (permits < 1 || permits > PERMITS_MAX) {
            throw new InvalidArgumentException("permits", Integer.toString(permits), "semaphore '"
                    + InvalidArgumentException.printable(name) + "' asked with " + permits + " permits: a semaphore"
                    + " has 1 to permitsMax " + PERMITS_MAX + " permits");
        }
        this.session = session;
        this.name = name;
        this.permits = permits;
        this.operation = "AcquirePermit " + name;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public int permits() {
        return permits;
    }

    @Override
    public PermitGrant acquire(Duration wait) {
        long waitMillis = DefaultFencedLock.checkWait(wait);
        return acquire(waitMillis).orElseThrow(() -> new LockTimeoutException(name, wait));
    }

    @Override
    public Optional<PermitGrant> tryAcquire() {
        return acquire(0);
    }

    /**
     * Acquires a permit, retried within the wait. A permit's release waits for the service, but its answer may come
     * before it is durable, and a restart may then lose it: the next AcquirePermit finds the permit still held by this
     * session and answers with it, and the client re-sends the lost release once it sees the restart. So an answer
     * with a permit this session released or is releasing ({@link DefaultSession#releasedAlready}) is not handed
     * out: that release is made again, waiting for it, and a permit asked for anew with what is left of the wait,
     * as {@link DefaultFencedLock} does for a lock.
     */
    private Optional<PermitGrant> acquire(long waitMillis) {
        long deadlineNanos = System.nanoTime() + MILLISECONDS.toNanos(waitMillis);
        for (int round = 1; ; round++) {
            session.checkAlive();
            long leftMillis = round == 1 ? waitMillis : WaitingAcquire.leftMillis(waitMillis, deadlineNanos);
            Optional<DefaultFencedLock.Answer> answer = ask(leftMillis);
            if (answer.isEmpty()) {
                return Optional.empty();
            }
            FencingToken token = answer.get().token();
            List<DefaultGrant> made = session.handOut(List.of(token), List.of(answer.get().sequencer()));
            if (made != null) {
                session.checkHandOut(made);
                return Optional.of(new Permit(made.get(0), PermitSlots.parse(token.lock()).permit()));
            }
            if (round == DefaultFencedLock.RELEASED_GRANT_ROUNDS_MAX) {
                throw new UnavailableException("AcquirePermit of semaphore '" + name + "' was answered " + round
                        + " times with permit " + token + ", which this session released: the release has not"
                        + " taken effect yet");
            }
            session.releaseAgain(token);
        }
    }

    /** One AcquirePermit call with a request id of its own; the permit's token, or empty when none was granted. */
    private Optional<DefaultFencedLock.Answer> ask(long waitMillis) {
        String requestId = session.client().requestIds().next();
        AcquirePermitRequest.Builder request = AcquirePermitRequest.newBuilder().setSessionId(session.id())
                .setSessionSecret(session.secret()).setSemaphore(name).setPermits(permits).setRequestId(requestId);
        AcquireResponse response = WaitingAcquire.call(session, operation, List.of(), waitMillis,
                LocksGrpc.getAcquirePermitMethod(), millis -> request.setWaitMillis(millis).build());
        if (!response.getAcquired()) {
            return Optional.empty();
        }
        FencingToken token = Protos.token(response.getToken());
        PermitSlots.Slot slot = PermitSlots.parse(token.lock());
        if (slot == null || !slot.semaphore().equals(name) || slot.permit() >= permits) {
            throw new InternalException("AcquirePermit of semaphore '" + name + "' was answered with token " + token
                    + ", which is not one of its " + permits + " slots");
        }
        return Optional.of(new DefaultFencedLock.Answer(token, Protos.sequencer(response.getToken(), token),
                response));
    }

    /** A permit's grant: the slot lock's grant and the slot's index. */
    private record Permit(DefaultGrant grant, int permit) implements PermitGrant {
        @Override
        public FencingToken token() {
            return grant.token();
        }

        @Override
        public String sequencer() {
            return grant.sequencer();
        }

        @Override
        public CompletionStage<GrantLoss> lost() {
            return grant.lost();
        }

        /** Waits for the service: see {@link io.fencer.client.FencedSemaphore.PermitGrant}. */
        @Override
        public void close() {
            grant.release();
        }

        @Override
        public void release() {
            grant.release();
        }
    }

    @Override
    public String toString() {
        return "FencedSemaphore[" + name + ", " + permits + " permits, session " + session.id() + "]";
    }
}
