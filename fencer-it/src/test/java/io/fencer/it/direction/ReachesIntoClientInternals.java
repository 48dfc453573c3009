package io.fencer.it.direction;

import io.fencer.client.internal.DefaultFencerClient;

/** A deliberate offender for {@code ModuleDirectionTest}'s control: it names a class of the client's internals. */
public final class ReachesIntoClientInternals {
    private ReachesIntoClientInternals() {}

    /** Returns the name of an internal class, so the dependency is real bytecode. */
    public static String internalName() {
        return DefaultFencerClient.class.getName();
    }
}
