package io.fencer.server.raft;

/**
 * The proposer's linger policy: whether a lone command waits for company before it leaves, and how long.
 *
 * <p>A command that arrives while no entry is in flight and nothing else waits goes out at once — unless lone
 * commands have lately found company: another command arriving within the window after them. On a contended lock
 * each commit answers two clients at once (the releaser and the next holder), who come back within a fraction of a
 * commit (the releaser's next Acquire, the next holder's Release); sent apart, the second waits behind the first's
 * whole commit, so every hand-off costs two commits. Held for the window, both leave in one entry: one commit per
 * hand-off. A lone client never finds company (its next command follows its answer), so it never waits.
 *
 * <p>The window is half the recent entry latency, at most the configured maximum ({@code fencer server --linger},
 * default {@link #WINDOW_NANOS_MAX}; zero turns lingering off): a wait that finds nobody costs at most half of what
 * the company it waits for would have waited. Lingering starts when at least
 * {@link #COMPANY_RATE_MIN} of recent lone commands found company, and stops when that rate falls below it.
 * Not thread-safe: the proposer calls it under its lock.
 */
final class Linger {
    /** The default longest window. */
    static final long WINDOW_NANOS_MAX = 1_000_000;
    static final double COMPANY_RATE_MIN = 0.5;
    /** The weight of one observation in the company rate: about the last sixteen lone commands count. */
    private static final double COMPANY_WEIGHT = 1.0 / 16;
    /** The weight of one entry in the entry latency average: about the last eight entries count. */
    private static final double LATENCY_WEIGHT = 1.0 / 8;

    private final long windowNanosMax;
    private double companyRate;
    private double entryNanosAverage;

    Linger() {
        this(WINDOW_NANOS_MAX);
    }

    /** A policy whose window is at most {@code windowNanosMax}; zero never lingers. */
    Linger(long windowNanosMax) {
        this(0, 0, windowNanosMax);
    }

    /** A policy that starts with the given observations (tests). */
    Linger(double companyRate, long entryNanosAverage) {
        this(companyRate, entryNanosAverage, WINDOW_NANOS_MAX);
    }

    /** A policy that starts with the given observations and window maximum (tests). */
    Linger(double companyRate, long entryNanosAverage, long windowNanosMax) {
        if (!(companyRate >= 0 && companyRate <= 1) || entryNanosAverage < 0) {
            throw new IllegalArgumentException("company rate " + companyRate + " must lie in [0, 1] and entry latency "
                    + entryNanosAverage + " ns must not be negative");
        }
        if (windowNanosMax < 0) {
            throw new IllegalArgumentException("linger window maximum " + windowNanosMax + " ns is negative");
        }
        this.companyRate = companyRate;
        this.entryNanosAverage = entryNanosAverage;
        this.windowNanosMax = windowNanosMax;
    }

    /** Returns whether the next lone command waits for company. */
    boolean lingers() {
        return companyRate >= COMPANY_RATE_MIN && windowNanos() > 0;
    }

    /** Returns how long a lone command waits for company: half the recent entry latency, at most the maximum. */
    long windowNanos() {
        return (long) Math.min(windowNanosMax, entryNanosAverage / 2);
    }

    /** Returns the longest window: zero when lingering is off. */
    long windowNanosMax() {
        return windowNanosMax;
    }

    /** Records whether a lone command found company within the window (waiting or not). */
    void observeCompany(boolean found) {
        companyRate += COMPANY_WEIGHT * ((found ? 1 : 0) - companyRate);
        assert companyRate >= 0 && companyRate <= 1 : "company rate " + companyRate;
    }

    /** Records how long an entry took from its submission to its answer. */
    void observeEntry(long latencyNanos) {
        if (latencyNanos < 0) {
            throw new IllegalArgumentException("entry latency " + latencyNanos + " ns is negative");
        }
        entryNanosAverage = entryNanosAverage == 0 ? latencyNanos
                : entryNanosAverage + LATENCY_WEIGHT * (latencyNanos - entryNanosAverage);
    }

    @Override
    public String toString() {
        return "Linger[company rate " + companyRate + ", window " + windowNanos() + " ns]";
    }
}
