package io.fencer.it;

/**
 * The resources fencer-it's test classes share when two of them run at once (see junit-platform.properties). A
 * class that measures a duration against a bound is {@code @Isolated} instead: it runs alone.
 */
final class TestResources {
    /**
     * Held by every chaos run ({@code @ResourceLock(TestResources.CHAOS)}): a run starts eight or more processes and
     * times its faults against leases of one to three seconds, so two runs at once would starve each other. A test
     * that starts several command-line processes at once and waits for all of them holds it to read
     * ({@code ResourceAccessMode.READ}): such tests run beside each other and beside single-server tests, never beside
     * a chaos run (a reader of {@code SharedLockExecProcessTest} once waited past 90 s beside one, on a machine
     * already busy).
     */
    static final String CHAOS = "fencer-it.chaos";

    /**
     * The launcher's class-data archive beside the packaged jar: {@code LauncherProcessTest} damages it, cuts it and
     * has it made again (holding it to write); a test that times twelve launcher starts against 10 s leases needs it
     * whole and no training run beside it (holding it to read).
     */
    static final String LAUNCHER_ARCHIVE = "fencer-it.launcher-archive";

    private TestResources() {}
}
