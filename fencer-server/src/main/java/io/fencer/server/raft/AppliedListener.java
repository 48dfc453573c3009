package io.fencer.server.raft;

import io.fencer.lock.Event;
import java.util.List;

/**
 * A receiver of the events of applied log entries. Called on the Ratis apply thread, in log order, after the
 * state machine's lock is released and before the proposers of the entry get their results; it must be quick and
 * must not block.
 */
public interface AppliedListener {
    /** Receives the events of one applied entry, in the order they happened; may be empty. */
    void onApplied(List<Event> events);

    /**
     * Receives the events of the entry at log index {@code revision}; by default {@link #onApplied(List)}. Entries
     * come in increasing index order; indexes of entries that are no command batch (Raft's own) are skipped.
     */
    default void onApplied(long revision, List<Event> events) {
        onApplied(events);
    }

    /**
     * Learns that the state was replaced by a snapshot taken at log index {@code index} (at start, or installed from
     * the leader): entries up to it will not be applied here, and their events were never reported.
     */
    default void onStateLoaded(long index) {}
}
