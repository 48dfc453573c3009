package io.fencer.client;

import io.fencer.core.FencerException;

/**
 * Receives a watch's events, in log order, one at a time, on a thread of the client's transport: return quickly
 * (hand slow work to an executor). While it does not return the client reads nothing more, so a listener that is
 * slow for long makes the server's history move past the watch (see {@link #onEnded}).
 */
public interface WatchListener {
    /** Receives one event; each exactly once, even across the watch's resumes on other peers. */
    void onEvent(LockEvent event);

    /**
     * Learns that the watch ended for good, with the error that ended it:
     * {@link io.fencer.core.RevisionOutOfRangeException} when the events after its last position are gone from the
     * server's history (re-read the state, watch again),
     * {@link io.fencer.core.PermissionDeniedException}, an invalid prefix, or
     * {@link io.fencer.core.UnavailableException} when peers refused to resume it many times in a row (each behind
     * its position, or at its watch limit), or its streams failed DEADLINE_EXCEEDED or CANCELLED many times in a row
     * with none accepted. Not called when the watch is closed.
     * By default nothing.
     */
    default void onEnded(FencerException error) {}
}
