package io.fencer.client.internal;

import io.fencer.api.v1.AcquirePermitRequest;
import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.client.FencedSemaphore;
import io.fencer.client.GrantLoss;
import io.fencer.client.LockTimeoutException;
import io.fencer.core.FencingToken;
import io.fencer.core.InternalException;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.internal.PermitSlots;
import java.time.Duration;
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

    private Optional<PermitGrant> acquire(long waitMillis) {
        session.checkAlive();
        String requestId = session.client().requestIds().next();
        AcquirePermitRequest.Builder request = AcquirePermitRequest.newBuilder().setSessionId(session.id())
                .setSessionSecret(session.secret()).setSemaphore(name).setPermits(permits).setRequestId(requestId);
        AcquireResponse response = WaitingAcquire.call(session, operation, waitMillis,
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
        DefaultGrant grant = new DefaultGrant(session, token, Protos.sequencer(response.getToken(), token));
        return Optional.of(new Permit(grant, slot.permit()));
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
