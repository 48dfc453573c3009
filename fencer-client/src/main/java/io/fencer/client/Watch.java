package io.fencer.client;

/**
 * An open watch of lock events. It resumes by itself, from the position after the last event delivered, when its
 * stream breaks (a peer stops, the leader changes, the network fails), until {@link #close() closed} or ended for
 * good ({@link WatchListener#onEnded}).
 */
public interface Watch extends AutoCloseable {
    /**
     * Returns the position a resume starts from: after the last event delivered, or the stream's start when none
     * was. Keep it to resume in another process ({@link FencerClient#watch(String, WatchPosition, WatchListener)}).
     */
    WatchPosition position();

    /** Stops the watch: no event is delivered after this returns, except one being delivered now. */
    @Override
    void close();
}
