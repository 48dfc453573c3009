package io.fencer.chaos.check.offender;

import io.fencer.chaos.process.Cluster;

/** A deliberate offender for {@code ChaosPackagesTest}'s control: a class of the check package naming a cluster. */
public final class CheckStartingACluster {
    private CheckStartingACluster() {}

    /** Returns the name of the cluster class, so the dependency is real bytecode. */
    public static String clusterName() {
        return Cluster.class.getName();
    }
}
