package io.fencer.server.watch;

import io.fencer.api.v1.EndCause;
import io.fencer.api.v1.FencingToken;
import io.fencer.api.v1.LockEvent;
import io.fencer.core.Sequencer;
import io.fencer.lock.Event;
import java.util.Optional;

/**
 * The lock events of a Watch: the state machine's events kept compactly in the history ({@link Kept}), and their
 * wire form ({@link LockEvent}), built when a stream sends one. Why not keep the wire form: a token's sequencer
 * carries its lock's name again, base64-encoded; the compact form shares the name with the event it came from.
 */
final class LockEvents {
    private LockEvents() {}

    /**
     * One lock event of the history at its position.
     *
     * @param token GRANTED, RELEASED, EXPIRED: the token's value; otherwise 0
     * @param endCause RELEASED, EXPIRED: how the grant ended; otherwise null
     * @param identity GRANTED: the identity that opened the holder's session; a revoked grant's RELEASED: the
     *     identity that revoked it; otherwise null (one field for both: an event has at most one, and the history
     *     keeps many events)
     */
    record Kept(long revision, int ordinal, LockEvent.Kind kind, String lock, long token, long sessionId,
            io.fencer.lock.EndCause endCause, String identity) {
        Kept(long revision, int ordinal, LockEvent.Kind kind, String lock, long token, long sessionId,
                io.fencer.lock.EndCause endCause) {
            this(revision, ordinal, kind, lock, token, sessionId, endCause, null);
        }
    }

    /**
     * Returns {@code event} at its position, or empty for an event that is about sessions only (opened, ended: their
     * locks' events are reported one by one) or the leader's own timers (lock-delay).
     */
    static Optional<Kept> of(Event event, long revision, int ordinal) {
        if (event instanceof Event.Queued queued) {
            return Optional.of(new Kept(revision, ordinal, LockEvent.Kind.KIND_QUEUED, queued.lock(), 0,
                    queued.sessionId(), null));
        } else if (event instanceof Event.Granted granted) {
            return Optional.of(new Kept(revision, ordinal, LockEvent.Kind.KIND_GRANTED, granted.token().lock(),
                    granted.token().value(), granted.sessionId(), null, granted.holderIdentity()));
        } else if (event instanceof Event.GrantEnded ended && ended.cause() == io.fencer.lock.EndCause.REVOKED) {
            return Optional.empty(); // reported by the Event.Revoked that follows it, which names who revoked
        } else if (event instanceof Event.Revoked revoked) {
            // A revoke is a grant's end as a release is, so a watcher of an earlier release reads it as one (a new
            // kind would be unknown to it); the end cause and revoked_by say what it was.
            return Optional.of(new Kept(revision, ordinal, LockEvent.Kind.KIND_RELEASED, revoked.token().lock(),
                    revoked.token().value(), revoked.sessionId(), io.fencer.lock.EndCause.REVOKED,
                    revoked.revokedBy()));
        } else if (event instanceof Event.GrantEnded ended) {
            boolean expired = ended.cause() == io.fencer.lock.EndCause.SESSION_EXPIRED;
            return Optional.of(new Kept(revision, ordinal, expired ? LockEvent.Kind.KIND_EXPIRED
                    : LockEvent.Kind.KIND_RELEASED, ended.token().lock(), ended.token().value(), ended.sessionId(),
                    ended.cause()));
        } else if (event instanceof Event.WaitDropped dropped) {
            return Optional.of(new Kept(revision, ordinal, LockEvent.Kind.KIND_WAIT_ENDED, dropped.lock(), 0,
                    dropped.sessionId(), null));
        } else if (event instanceof Event.WaitCancelled cancelled) {
            return Optional.of(new Kept(revision, ordinal, LockEvent.Kind.KIND_WAIT_ENDED, cancelled.lock(), 0,
                    cancelled.sessionId(), null));
        }
        return Optional.empty();
    }

    /** Returns the wire form of a kept event; a token's sequencer is unsigned, a credential only its grantee gets. */
    static LockEvent wire(Kept kept) {
        LockEvent.Builder wire = LockEvent.newBuilder().setRevision(kept.revision()).setOrdinal(kept.ordinal())
                .setKind(kept.kind()).setLock(kept.lock()).setSessionId(kept.sessionId());
        if (kept.token() != 0) {
            io.fencer.core.FencingToken token = new io.fencer.core.FencingToken(kept.lock(), kept.token());
            wire.setToken(FencingToken.newBuilder().setLock(token.lock()).setValue(token.value())
                    .setSequencer(Sequencer.format(token, null)));
        }
        if (kept.endCause() != null) {
            wire.setEndCause(endCause(kept.endCause()));
        }
        if (kept.identity() != null && kept.kind() == LockEvent.Kind.KIND_GRANTED) {
            wire.setHolderIdentity(kept.identity());
        } else if (kept.identity() != null) {
            wire.setRevokedBy(kept.identity());
        }
        return wire.build();
    }

    /** Returns the start message of a stream at position ({@code revision}, {@code ordinal}). */
    static LockEvent start(long revision, int ordinal) {
        return LockEvent.newBuilder().setKind(LockEvent.Kind.KIND_START).setRevision(revision).setOrdinal(ordinal)
                .build();
    }

    private static EndCause endCause(io.fencer.lock.EndCause cause) {
        return switch (cause) {
            case RELEASED -> EndCause.END_CAUSE_RELEASED;
            case SESSION_CLOSED -> EndCause.END_CAUSE_SESSION_CLOSED;
            case SESSION_EXPIRED -> EndCause.END_CAUSE_SESSION_EXPIRED;
            case REVOKED -> EndCause.END_CAUSE_REVOKED;
        };
    }
}
