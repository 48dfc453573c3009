package io.fencer.chaos.process.offender;

import io.fencer.chaos.fault.NetworkFaults;

/**
 * A deliberate offender for {@code ChaosPackagesTest}'s control: a class of the process package naming the network
 * faults, which themselves use the process package, so the two packages form a cycle.
 */
public final class ProcessPlayingAFault {
    private ProcessPlayingAFault() {}

    /** Returns the name of the network faults' class, so the dependency is real bytecode. */
    public static String faultsName() {
        return NetworkFaults.class.getName();
    }
}
