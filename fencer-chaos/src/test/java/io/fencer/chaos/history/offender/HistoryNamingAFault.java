package io.fencer.chaos.history.offender;

import io.fencer.chaos.fault.Fault;

/** A deliberate offender for {@code ChaosPackagesTest}'s control: a class of the history package naming a fault. */
public final class HistoryNamingAFault {
    private HistoryNamingAFault() {}

    /** Returns the name of a fault class, so the dependency is real bytecode. */
    public static String faultName() {
        return Fault.class.getName();
    }
}
