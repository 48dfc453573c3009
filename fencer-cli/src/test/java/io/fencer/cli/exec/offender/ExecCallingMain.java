package io.fencer.cli.exec.offender;

import io.fencer.cli.Main;

/** A deliberate offender for {@code CliPackagesTest}'s control: a class of the exec package naming the command line. */
public final class ExecCallingMain {
    private ExecCallingMain() {}

    /** Returns the name of the command line's main class, so the dependency is real bytecode. */
    public static String mainName() {
        return Main.class.getName();
    }
}
