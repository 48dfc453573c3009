package io.fencer.spring;

import io.fencer.core.Ticker;

/**
 * The client's clock of one test "node", which a test freezes to play a paused process: while frozen the client sends
 * no keepalive (none falls due) and counts no lease time, as a process stopped by a GC pause or SIGSTOP; the service,
 * on its own clock, expires the session meanwhile. Resumed, it reads the real clock again, as the process wakes up.
 */
public final class PausableTicker implements Ticker {
    private volatile long frozenNanos;
    private volatile boolean frozen;

    @Override
    public long nanoTime() {
        return frozen ? frozenNanos : System.nanoTime();
    }

    /** Freezes the reading where it is now. */
    public synchronized void pause() {
        frozenNanos = System.nanoTime();
        frozen = true;
    }

    /** Reads the real clock again: the time frozen passes at once. */
    public synchronized void resume() {
        frozen = false;
    }
}
