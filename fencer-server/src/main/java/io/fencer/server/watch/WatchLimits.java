package io.fencer.server.watch;

/**
 * The bounds of a peer's Watch service, each enforced with an error naming it and its value.
 *
 * @param watchersMax most Watch streams open on one peer at once
 * @param eventsKeptMax most lock events one peer keeps in its history (all locks), which bounds how far back a
 *     watcher can resume and how far behind a slow watcher can fall
 */
public record WatchLimits(int watchersMax, int eventsKeptMax) {
    public static final WatchLimits DEFAULT = new WatchLimits(1_000, 100_000);

    public WatchLimits {
        if (watchersMax < 1 || eventsKeptMax < 1) {
            throw new IllegalArgumentException("watch limits must be positive: watchersMax " + watchersMax
                    + ", eventsKeptMax " + eventsKeptMax);
        }
    }
}
