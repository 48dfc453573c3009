package io.fencer.server.net;

import io.fencer.core.Ticker;
import java.time.Duration;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;

/**
 * Decides which refusals are logged: at most one line per identity per interval, the next line counting the
 * ones left out in between, so a client retrying a refused call (or connection) in a loop cannot flood the log. An
 * identity is whatever the refusals are counted by: a caller's identity for refused calls, a remote address for
 * refused connections, a peer for the Raft port. The identities remembered are bounded: when
 * {@link #identitiesMax} are, those whose interval has passed are forgotten; when none has, the new identity shares
 * one line per interval with every other identity beyond the bound. Thread-safe.
 */
public final class RefusalLog {
    /** What the shared line stands for: the identities beyond the bound. */
    static final String OTHER_IDENTITIES = "(identities beyond the log's bound)";

    private final Ticker ticker;
    private final long intervalNanos;
    private final int identitiesMax;
    private final Map<String, Window> windows = new HashMap<>(); // guarded by this
    /** When the windows were last swept for quiet identities; a sweep reads them all, so it runs once an interval. */
    private long sweptAtNanos; // guarded by this

    /** One identity's current interval: when its last line was logged, and how many were left out since. */
    private static final class Window {
        long loggedAtNanos;
        long suppressed;

        Window(long loggedAtNanos) {
            this.loggedAtNanos = loggedAtNanos;
        }
    }

    public RefusalLog(Ticker ticker, Duration interval, int identitiesMax) {
        if (interval.isNegative() || interval.isZero() || identitiesMax < 1) {
            throw new IllegalArgumentException("interval " + interval + " and identitiesMax " + identitiesMax
                    + " must be positive");
        }
        this.ticker = ticker;
        this.intervalNanos = interval.toNanos();
        this.identitiesMax = identitiesMax;
        this.sweptAtNanos = ticker.nanoTime() - intervalNanos;
    }

    /**
     * Records one refused call of {@code identity} and returns how many of its refusals were left out of the log
     * since its last line when this one is to be logged, or -1 when this one is left out.
     */
    public synchronized long admit(String identity) {
        long now = ticker.nanoTime();
        String key = identity;
        Window window = windows.get(key);
        if (window == null && windows.size() >= identitiesMax && !forgetQuiet(now)) {
            key = OTHER_IDENTITIES;
            window = windows.get(key);
        }
        if (window == null) {
            windows.put(key, new Window(now));
            return 0;
        }
        if (now - window.loggedAtNanos < intervalNanos) {
            window.suppressed++;
            return -1;
        }
        long suppressed = window.suppressed;
        window.loggedAtNanos = now;
        window.suppressed = 0;
        return suppressed;
    }

    /**
     * Forgets the identities whose interval has passed (their lines left out are then not reported: the metric
     * still counts them) and returns whether any was, i.e. whether there is room now.
     */
    private boolean forgetQuiet(long now) {
        if (now - sweptAtNanos < intervalNanos) {
            return false;
        }
        sweptAtNanos = now;
        boolean forgot = false;
        for (Iterator<Window> iterator = windows.values().iterator(); iterator.hasNext(); ) {
            if (now - iterator.next().loggedAtNanos >= intervalNanos) {
                iterator.remove();
                forgot = true;
            }
        }
        return forgot;
    }

    /** Returns how many identities are remembered (for tests). */
    synchronized int identitiesRemembered() {
        return windows.size();
    }
}
