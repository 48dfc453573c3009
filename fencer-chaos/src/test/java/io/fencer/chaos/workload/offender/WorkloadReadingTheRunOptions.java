package io.fencer.chaos.workload.offender;

import io.fencer.chaos.ChaosOptions;

/**
 * A deliberate offender for {@code ChaosPackagesTest}'s control: a class of the workload package naming the run's
 * options, an entry point above it.
 */
public final class WorkloadReadingTheRunOptions {
    private WorkloadReadingTheRunOptions() {}

    /** Returns the name of the run options' class, so the dependency is real bytecode. */
    public static String optionsName() {
        return ChaosOptions.class.getName();
    }
}
