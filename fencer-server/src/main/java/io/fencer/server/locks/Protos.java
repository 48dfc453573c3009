package io.fencer.server.locks;

import io.fencer.api.v1.LockInfo;
import io.fencer.api.v1.SemaphoreInfo;
import io.fencer.api.v1.SharedHolder;
import io.fencer.api.v1.ValidateResponse;
import io.fencer.api.v1.Waiter;
import io.fencer.core.FencingToken;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LockMode;
import io.fencer.core.internal.PermitSlots;
import io.fencer.core.Sequencer;
import io.fencer.core.TokenKeys;
import io.fencer.lock.EndCause;
import io.fencer.lock.LockView;
import io.fencer.lock.SemaphoreView;
import io.fencer.lock.Validation;

/** Conversions from the lock state machine's values to the wire messages of {@code fencer.v1}. */
final class Protos {
    private Protos() {}

    /** Returns the wire token, its sequencer signed with {@code keys} (unsigned when keys are null). */
    static io.fencer.api.v1.FencingToken token(FencingToken token, TokenKeys keys) {
        io.fencer.api.v1.FencingToken.Builder wire = io.fencer.api.v1.FencingToken.newBuilder()
                .setLock(token.lock())
                .setValue(token.value())
                .setSequencer(Sequencer.format(token, keys));
        if (token.mode() == LockMode.SHARED) {
            wire.setMode(io.fencer.api.v1.LockMode.LOCK_MODE_SHARED);
        }
        return wire.build();
    }

    /** Returns the wire form of the proposer's durable mark. */
    static io.fencer.api.v1.DurableMark durableMark(io.fencer.server.raft.Proposer.DurableMark mark) {
        return io.fencer.api.v1.DurableMark.newBuilder().setIncarnation(mark.incarnation())
                .setSequence(mark.sequence()).build();
    }

    /** Returns the wire token of a semaphore's permit grant: the slot's token with its semaphore and index. */
    static io.fencer.api.v1.FencingToken permitToken(FencingToken token, TokenKeys keys) {
        PermitSlots.Slot slot = PermitSlots.parse(token.lock());
        if (slot == null) {
            throw new IllegalStateException("permit grant " + token + " is not of a slot lock");
        }
        return token(token, keys).toBuilder().setSemaphore(slot.semaphore()).setPermit(slot.permit()).build();
    }

    /** Returns the wire form of a semaphore in use; its holders' sequencers unsigned. */
    static SemaphoreInfo semaphoreInfo(SemaphoreView view) {
        SemaphoreInfo.Builder info = SemaphoreInfo.newBuilder().setSemaphore(view.semaphore())
                .setPermits(view.permits());
        for (int permit = 0; permit < view.permits(); permit++) {
            LockView slot = view.slots().get(permit);
            info.addSlots(slot == null ? LockInfo.newBuilder().setLock(PermitSlots.slotName(view.semaphore(),
                    permit)).build() : lockInfo(slot));
        }
        for (LockView.WaiterView waiter : view.waiters()) {
            info.addWaiters(Waiter.newBuilder().setSessionId(waiter.sessionId()).setRequestId(waiter.requestId()));
        }
        return info.build();
    }

    /**
     * Returns the mode a request names by its wire number: unspecified is exclusive, as from every client before
     * modes.
     *
     * @throws InvalidArgumentException naming the field and the number when it is no lock mode
     */
    static LockMode mode(String field, int wireMode) {
        if (wireMode == io.fencer.api.v1.LockMode.LOCK_MODE_UNSPECIFIED_VALUE
                || wireMode == io.fencer.api.v1.LockMode.LOCK_MODE_EXCLUSIVE_VALUE) {
            return LockMode.EXCLUSIVE;
        }
        if (wireMode == io.fencer.api.v1.LockMode.LOCK_MODE_SHARED_VALUE) {
            return LockMode.SHARED;
        }
        throw new InvalidArgumentException(field, Integer.toString(wireMode), field + " " + wireMode
                + " is not a lock mode: expected 0 (unspecified: exclusive), 1 (LOCK_MODE_EXCLUSIVE) or 2"
                + " (LOCK_MODE_SHARED)");
    }

    static io.fencer.api.v1.EndCause endCause(EndCause cause) {
        return switch (cause) {
            case RELEASED -> io.fencer.api.v1.EndCause.END_CAUSE_RELEASED;
            case SESSION_CLOSED -> io.fencer.api.v1.EndCause.END_CAUSE_SESSION_CLOSED;
            case SESSION_EXPIRED -> io.fencer.api.v1.EndCause.END_CAUSE_SESSION_EXPIRED;
            case REVOKED -> io.fencer.api.v1.EndCause.END_CAUSE_REVOKED;
        };
    }

    /**
     * Returns the wire form of a lock; its holder's sequencer is unsigned, as only the grantee gets a signed one, and
     * the holder is shown by the identity that opened its session, not by the session's id.
     */
    static LockInfo lockInfo(LockView view) {
        LockInfo.Builder info = LockInfo.newBuilder()
                .setLock(view.lock())
                .setLastToken(view.lastToken())
                .setDelayed(view.delayed());
        if (view.holder() != null) {
            info.setHolder(token(view.holder(), null)).setHolderIdentity(view.holderIdentity());
        }
        for (LockView.WaiterView waiter : view.waiters()) {
            Waiter.Builder wire = Waiter.newBuilder().setSessionId(waiter.sessionId())
                    .setRequestId(waiter.requestId());
            if (waiter.mode() == LockMode.SHARED) {
                wire.setMode(io.fencer.api.v1.LockMode.LOCK_MODE_SHARED);
            }
            info.addWaiters(wire);
        }
        for (LockView.SharedHolderView reader : view.sharedHolders()) {
            info.addSharedHolders(SharedHolder.newBuilder().setToken(token(reader.token(), null))
                    .setIdentity(reader.identity()));
        }
        if (view.anyHolder() == null && view.lastEnd() != null) {
            info.setLastEnd(endCause(view.lastEnd()));
        }
        return info.setWaitersTotal(view.waitersTotal()).setSharedHoldersTotal(view.sharedHoldersTotal()).build();
    }

    /** Returns the LockInfo of a lock without a record: free, and above the floor. */
    static LockInfo freeLock(String lock, long floor) {
        return LockInfo.newBuilder().setLock(lock).setLastToken(floor).build();
    }

    static ValidateResponse validation(Validation validation, long leaseRemainingMillis) {
        ValidateResponse.Builder response = ValidateResponse.newBuilder().setLastToken(validation.lastToken());
        switch (validation.status()) {
            case CURRENT -> response.setStatus(ValidateResponse.Status.CURRENT)
                    .setHolderIdentity(validation.holderIdentity())
                    .setLeaseRemainingMillis(leaseRemainingMillis);
            case SUPERSEDED -> response.setStatus(ValidateResponse.Status.SUPERSEDED)
                    .setSupersededBy(validation.lastToken());
            case ENDED -> response.setStatus(ValidateResponse.Status.ENDED);
            case NEVER_ISSUED -> response.setStatus(ValidateResponse.Status.NEVER_ISSUED);
        }
        if (validation.ended() != null) {
            response.setEnded(endCause(validation.ended()));
        }
        return response.build();
    }
}
