package io.fencer.cli;

import io.fencer.chaos.ChaosCheck;
import io.fencer.chaos.ChaosOptions;
import io.fencer.chaos.check.CheckResult;
import io.fencer.chaos.workload.Workload;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code fencer chaos check DIR}: runs every checker again on a saved run's history and prints the same verdict;
 * exit 0 without violations, {@link Main#EXIT_VIOLATIONS} with some, {@link Main#EXIT_ERROR} when the history
 * cannot be read.
 */
@Command(name = "check", mixinStandardHelpOptions = true,
        description = {"Checks a saved chaos run again: every checker over DIR/history.jsonl, with the workload "
                + "DIR/run.json names, and the same verdict as the run printed. Exit 0: no violation; 7: violations."})
final class ChaosCheckCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "DIR",
            description = "A chaos run's directory (its --dir), or a history file (JSONL) alone.")
    Path path;

    @Option(names = "--workload", paramLabel = "KIND",
            description = "counter, set or semaphore: check as this workload instead of the one run.json names "
                    + "(default: run.json's, or counter without it).")
    String workload;

    @Option(names = "--permits", paramLabel = "N",
            description = "With --workload semaphore: the semaphore's permits (default: 2).")
    Integer permits;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        ChaosCheck.Settings settings = settings();
        // the verdict is a few dozen lines: printed whole once checked, on the command's own output
        ByteArrayOutputStream verdict = new ByteArrayOutputStream();
        CheckResult result;
        try {
            result = ChaosCheck.check(path, settings, new PrintStream(verdict, true, StandardCharsets.UTF_8));
        } catch (IOException e) {
            spec.commandLine().getErr().println("fencer: " + e.getMessage());
            return Main.EXIT_ERROR;
        }
        spec.commandLine().getOut().print(verdict.toString(StandardCharsets.UTF_8));
        spec.commandLine().getOut().flush();
        return result.valid() ? Main.EXIT_OK : Main.EXIT_VIOLATIONS;
    }

    /** Returns the settings the options give, or null to use the run's own. */
    private ChaosCheck.Settings settings() {
        if (workload == null) {
            if (permits != null) {
                throw new ParameterException(spec.commandLine(), "--permits goes with --workload semaphore");
            }
            return null;
        }
        Workload kind;
        try {
            kind = Workload.valueOf(workload.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(),
                    "--workload must be counter, set or semaphore, not '" + workload + "'");
        }
        if (permits != null && (kind != Workload.SEMAPHORE || permits < 1)) {
            throw new ParameterException(spec.commandLine(), "--permits " + permits
                    + " needs --workload semaphore and at least 1 permit");
        }
        int permitCount = kind != Workload.SEMAPHORE ? 1 : permits != null ? permits : ChaosOptions.PERMITS_DEFAULT;
        return new ChaosCheck.Settings(kind, permitCount, true); // fencing: the run's own
    }
}
