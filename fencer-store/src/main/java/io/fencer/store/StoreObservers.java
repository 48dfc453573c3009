package io.fencer.store;

import java.util.Objects;

/**
 * The observers a test installs on a {@link StoreEngine} to watch inside its guards: every applied write, every
 * group of writes taken by a commit. None by default; each is read (volatile) where it is called, so a new one
 * takes effect for the next write applied or group taken.
 */
final class StoreObservers {
    private volatile StoreEngine.ApplyListener applyListener = StoreEngine.ApplyListener.NONE;
    private volatile StoreEngine.GroupListener groupListener = StoreEngine.GroupListener.NONE;

    StoreEngine.ApplyListener applyListener() {
        return applyListener;
    }

    void applyListener(StoreEngine.ApplyListener listener) {
        this.applyListener = Objects.requireNonNull(listener, "listener");
    }

    StoreEngine.GroupListener groupListener() {
        return groupListener;
    }

    void groupListener(StoreEngine.GroupListener listener) {
        this.groupListener = Objects.requireNonNull(listener, "listener");
    }
}
