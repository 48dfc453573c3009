package io.fencer.server.watch;

import io.fencer.api.v1.EndCause;
import io.fencer.api.v1.FencingToken;
import io.fencer.api.v1.LockEvent;
import io.fencer.core.Sequencer;
import io.fencer.lock.Event;
import java.util.Optional;

/** Conversions of the state machine's events to the wire's {@link LockEvent}s of a Watch. */
final class LockEvents {
    private LockEvents() {}

    /**
     * Returns the wire form of {@code event} at its position, or empty for an event that is about sessions only
     * (opened, ended: their locks' events are reported one by one) or the leader's own timers (lock-delay).
     */
    static Optional<LockEvent> of(Event event, long revision, int ordinal) {
        LockEvent.Builder wire = LockEvent.newBuilder().setRevision(revision).setOrdinal(ordinal);
        if (event instanceof Event.Queued queued) {
            wire.setKind(LockEvent.Kind.KIND_QUEUED).setLock(queued.lock()).setSessionId(queued.sessionId());
        } else if (event instanceof Event.Granted granted) {
            wire.setKind(LockEvent.Kind.KIND_GRANTED).setLock(granted.token().lock())
                    .setToken(unsigned(granted.token())).setSessionId(granted.sessionId());
        } else if (event instanceof Event.GrantEnded ended) {
            boolean expired = ended.cause() == io.fencer.lock.EndCause.SESSION_EXPIRED;
            wire.setKind(expired ? LockEvent.Kind.KIND_EXPIRED : LockEvent.Kind.KIND_RELEASED)
                    .setLock(ended.token().lock()).setToken(unsigned(ended.token()))
                    .setSessionId(ended.sessionId()).setEndCause(endCause(ended.cause()));
        } else if (event instanceof Event.WaitDropped dropped) {
            wire.setKind(LockEvent.Kind.KIND_WAIT_ENDED).setLock(dropped.lock()).setSessionId(dropped.sessionId());
        } else if (event instanceof Event.WaitCancelled cancelled) {
            wire.setKind(LockEvent.Kind.KIND_WAIT_ENDED).setLock(cancelled.lock())
                    .setSessionId(cancelled.sessionId());
        } else {
            return Optional.empty();
        }
        return Optional.of(wire.build());
    }

    /** Returns the start message of a stream at position ({@code revision}, {@code ordinal}). */
    static LockEvent start(long revision, int ordinal) {
        return LockEvent.newBuilder().setKind(LockEvent.Kind.KIND_START).setRevision(revision).setOrdinal(ordinal)
                .build();
    }

    /** The token with its sequencer unsigned: a signed one is a credential, for its grantee's answer only. */
    private static FencingToken unsigned(io.fencer.core.FencingToken token) {
        return FencingToken.newBuilder().setLock(token.lock()).setValue(token.value())
                .setSequencer(Sequencer.format(token, null)).build();
    }

    private static EndCause endCause(io.fencer.lock.EndCause cause) {
        return switch (cause) {
            case RELEASED -> EndCause.END_CAUSE_RELEASED;
            case SESSION_CLOSED -> EndCause.END_CAUSE_SESSION_CLOSED;
            case SESSION_EXPIRED -> EndCause.END_CAUSE_SESSION_EXPIRED;
        };
    }
}
