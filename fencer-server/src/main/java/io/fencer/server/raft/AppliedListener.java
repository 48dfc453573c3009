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
}
