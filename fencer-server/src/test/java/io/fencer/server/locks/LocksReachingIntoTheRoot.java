package io.fencer.server.locks;

import io.fencer.server.FencerServer;
import io.fencer.server.IdentityQuotas;

/**
 * Breaks the package graph on purpose: {@code locks} reaching into the root's wiring ({@link FencerServer}), beside a
 * use of a root settings value ({@link IdentityQuotas}) that the graph allows. {@code PackageGraphTest}'s control
 * shows its rules report the first and not the second; main code never does this.
 */
public final class LocksReachingIntoTheRoot {
    private LocksReachingIntoTheRoot() {}

    public static int port(FencerServer server) {
        return server.port();
    }

    public static int sessionsMax(IdentityQuotas quotas) {
        return quotas.sessionsPerIdentityMax();
    }
}
