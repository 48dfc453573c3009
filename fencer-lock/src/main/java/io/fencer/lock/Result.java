package io.fencer.lock;

import io.fencer.core.FencerException;
import io.fencer.core.FencingToken;
import java.util.List;

/** The answer of the state machine to one command, for the caller that proposed it. */
public sealed interface Result {

    /** The session is open (newly, or again for a retried request id). */
    record SessionOpened(long sessionId, long ttlMillis) implements Result {}

    /** The session ended (or was already gone: {@code released} is then empty). */
    record SessionEnded(long sessionId, List<FencingToken> released) implements Result {
        public SessionEnded {
            released = List.copyOf(released);
        }
    }

    /** The session holds the lock under {@code token} (newly granted or granted before). */
    record Granted(FencingToken token) implements Result {}

    /** The session holds every lock of a multi-lock, under these tokens in the order the locks were named. */
    record GrantedAll(List<FencingToken> tokens) implements Result {
        public GrantedAll {
            tokens = List.copyOf(tokens);
        }
    }

    /** The session waits in the lock's queue at {@code position} (0 = next in line). */
    record Queued(String lock, int position) implements Result {}

    /** A try found the lock taken: {@code holder} is the holder's token, or null while the lock is delayed. */
    record Busy(String lock, FencingToken holder) implements Result {}

    /** The wait was removed ({@code removed}), or there was none. */
    record WaitCancelled(boolean removed) implements Result {}

    /** The token released the lock; {@code next} is the waiter granted by it, or null. */
    record Released(FencingToken released, FencingToken next) implements Result {}

    /**
     * The grant {@code revoked} of session {@code sessionId} was revoked (the session stays open); {@code next} is the
     * waiter granted by it, or null (no waiter, or the lock entered its lock-delay).
     */
    record Revoked(FencingToken revoked, long sessionId, FencingToken next) implements Result {}

    /** The lock-delay ended ({@code ended}), or there was none; {@code next} is the waiter granted, or null. */
    record DelayEnded(String lock, boolean ended, FencingToken next) implements Result {}

    /** Lease bounds were recorded for {@code recorded} sessions; the others listed had ended. */
    record LeasesCheckpointed(int recorded) implements Result {}

    /** The group's format level is now {@code level}. */
    record FormatLevelSet(int level) implements Result {}

    /**
     * The floor after a {@link Command.RaiseFloor}: every later grant of any lock is above {@code floor} (a floor at
     * the end of the group's generation grants nothing more).
     */
    record FloorRaised(long floor) implements Result {}

    /**
     * The store's reply to a {@link Command.StoreEntry}, in the store's own encoding (empty where the lock state
     * machine applied it alone, which answers nothing).
     */
    record StoreReply(byte[] reply) implements Result {
        public StoreReply {
            java.util.Objects.requireNonNull(reply, "reply");
        }

        @Override
        public boolean equals(Object other) {
            return other instanceof StoreReply that && java.util.Arrays.equals(reply, that.reply);
        }

        @Override
        public int hashCode() {
            return java.util.Arrays.hashCode(reply);
        }

        @Override
        public String toString() {
            return "StoreReply[" + reply.length + " bytes]";
        }
    }

    /** The command was refused with a typed error; nothing changed. */
    record Rejected(FencerException error) implements Result {}
}
