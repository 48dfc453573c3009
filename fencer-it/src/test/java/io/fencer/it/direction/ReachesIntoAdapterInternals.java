package io.fencer.it.direction;

import io.fencer.adapter.internal.RefusalCounter;

/**
 * A deliberate offender for {@code ModuleDirectionTest}'s control: a class outside the resource adapters that names
 * a class of what they share.
 */
public final class ReachesIntoAdapterInternals {
    private ReachesIntoAdapterInternals() {}

    /** Returns the name of an internal class, so the dependency is real bytecode. */
    public static String internalName() {
        return RefusalCounter.class.getName();
    }
}
