package io.fencer.it;

import io.fencer.chaos.ChaosOptions;
import io.fencer.chaos.ChaosRun;
import io.fencer.chaos.process.Launcher;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/** Runs of {@code fencer chaos} inside a test, with the run's narration printed once it ended (or failed). */
final class ChaosRuns {
    private ChaosRuns() {}

    /** Fails unless this JVM runs as root: the partition faults make network namespaces (CI runs as root). */
    static void requireRoot() throws Exception {
        Process id = new ProcessBuilder("id", "-u").redirectErrorStream(true).start();
        String uid = new String(id.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        id.waitFor();
        assertThat(uid).as("these tests make network namespaces: run them as root (CI does)").isEqualTo("0");
    }

    /** Runs {@code options} with {@code launcher}'s processes and prints the narration to the test's output. */
    static ChaosRun.Outcome narrated(ChaosOptions options, Launcher launcher) throws Exception {
        ByteArrayOutputStream narration = new ByteArrayOutputStream();
        try (PrintStream out = new PrintStream(narration, true, StandardCharsets.UTF_8)) {
            ChaosRun.Outcome outcome = ChaosRun.run(options, launcher, out);
            System.out.println(narration.toString(StandardCharsets.UTF_8));
            return outcome;
        } catch (Exception | AssertionError e) {
            System.out.println(narration.toString(StandardCharsets.UTF_8));
            throw e;
        }
    }

    /**
     * Runs two chaos runs at once, each narrated as {@link #narrated} does, and returns their outcomes in order: a
     * fenced run and its control on the same schedule, whose clusters share nothing (own processes, ports and
     * directories, and with network faults their own namespaces on their own subnet). Together they take the time of
     * one: the runs spend most of it waiting on their schedules. Not for runs whose check has a timing tolerance
     * (clock faults): beside another run, the CPU it does not get moves what it measures.
     */
    static ChaosRun.Outcome[] together(ChaosOptions first, ChaosOptions second, Launcher launcher) throws Exception {
        java.util.concurrent.ExecutorService other = java.util.concurrent.Executors.newSingleThreadExecutor();
        try {
            java.util.concurrent.Future<ChaosRun.Outcome> secondOutcome = other.submit(() -> narrated(second,
                    launcher));
            ChaosRun.Outcome firstOutcome = narrated(first, launcher);
            try {
                return new ChaosRun.Outcome[] {firstOutcome, secondOutcome.get()};
            } catch (java.util.concurrent.ExecutionException e) {
                throw e.getCause() instanceof Exception cause ? cause : e;
            }
        } finally {
            other.shutdown();
            if (!other.awaitTermination(5, java.util.concurrent.TimeUnit.MINUTES)) {
                other.shutdownNow();
            }
        }
    }
}
