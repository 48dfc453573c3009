package io.fencer.chaos.report.offender;

import io.fencer.chaos.workload.WorkerOptions;

/**
 * A deliberate offender for {@code ChaosPackagesTest}'s control: a class of the report package naming a worker's
 * options.
 */
public final class ReportReadingTheWorkerOptions {
    private ReportReadingTheWorkerOptions() {}

    /** Returns the name of the worker options' class, so the dependency is real bytecode. */
    public static String optionsName() {
        return WorkerOptions.class.getName();
    }
}
