package io.fencer.chaos;

import io.fencer.chaos.check.CheckResult;
import io.fencer.chaos.check.Violation;
import io.fencer.chaos.history.HistoryEvent;
import io.fencer.chaos.history.HistoryLog;
import io.fencer.chaos.process.ChildProcess;
import io.fencer.chaos.process.Cluster;
import io.fencer.chaos.process.Launcher;
import io.fencer.chaos.report.TimelineReport;
import io.fencer.chaos.workload.WorkerArguments;
import io.fencer.chaos.workload.WorkerOptions;
import io.fencer.chaos.workload.Workload;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * {@code fencer demo}: the paused-client scenario with real processes, narrated live. A lock server and a store server
 * run as processes; two client processes, A and B, share one lock. A acquires; A is frozen (SIGSTOP) past its
 * lease, as in a long GC pause; B is granted the next token and writes; A is resumed and writes with its old
 * token. With fencing the store refuses A's write and A's diagnosis says why; then the same scenario with fencing
 * off, where A's stale write silently overwrites B's.
 */
public final class Demo {
    private static final Duration ANSWER_TIMEOUT = Duration.ofSeconds(90);
    /** A scripted client neither loops nor thinks, so this goes unused; it is the default of the chaos command. */
    private static final Duration CLIENT_THINK_MAX = Duration.ofMillis(100);

    private final Launcher launcher;
    private final Path directory;
    private final PrintStream out;
    private final Duration ttl;
    private final long originNanos = System.nanoTime();
    private final HistoryLog nemesis;

    private Demo(Launcher launcher, Path directory, PrintStream out, Duration ttl) throws IOException {
        this.launcher = launcher;
        this.directory = directory;
        this.out = out;
        this.ttl = ttl;
        Files.createDirectories(directory.resolve("history"));
        this.nemesis = HistoryLog.open(directory.resolve("history").resolve("nemesis.jsonl"), "nemesis",
                originNanos);
    }

    /** What one half of the demo showed. */
    public record Act(boolean fencing, long tokenOfA, long tokenOfB, String answerToA, String finalValue,
            boolean staleWriteRefused) {
    }

    /** What the demo showed, both halves. */
    public record Outcome(Act fenced, Act unfenced) {
        /** True when the demo showed what it should: fencing refused A's write, and without it A's write won. */
        public boolean asExpected() {
            return fenced.staleWriteRefused() && !unfenced.staleWriteRefused()
                    && fenced.tokenOfB() == fenced.tokenOfA() + 1;
        }
    }

    /**
     * Runs the demo in {@code directory} (data, logs, histories), narrating on {@code out}; writes the timeline to
     * {@code htmlFile} when it is not null.
     */
    public static Outcome run(Launcher launcher, Path directory, PrintStream out, Duration ttl, Path htmlFile)
            throws IOException, InterruptedException {
        Demo demo = new Demo(launcher, directory, out, ttl);
        try (demo.nemesis; Cluster cluster = new Cluster(launcher, directory.resolve("servers"), 1)) {
            out.println("Starting a lock server and a store server as separate processes...");
            cluster.start();
            out.println("  lock service " + cluster.lockEndpoints().get(0) + ", store " + cluster.storeEndpoint());
            Act fenced = demo.act(cluster, true);
            Act unfenced = demo.act(cluster, false);
            Outcome outcome = new Outcome(fenced, unfenced);
            demo.summarize(outcome);
            if (htmlFile != null) {
                demo.writeTimeline(htmlFile, outcome);
                out.println("timeline: " + htmlFile.toAbsolutePath());
            }
            return outcome;
        }
    }

    private Act act(Cluster cluster, boolean fencing) throws IOException, InterruptedException {
        String lock = fencing ? "ledger" : "ledger-unfenced";
        String suffix = fencing ? "" : "-unfenced";
        say("");
        say(fencing ? "=== 1. With fencing: every write carries the grant's token; the store checks it ==="
                : "=== 2. The same scenario with fencing OFF: a lease alone ===");
        try (ChildProcess a = client(cluster, "A" + suffix, lock, fencing);
             ChildProcess b = client(cluster, "B" + suffix, lock, fencing)) {
            await(a, "ready");
            await(b, "ready");
            long tokenOfA = Long.parseLong(ask(a, "acquire", "granted").split(" ")[1]);
            say("A acquires lock '" + lock + "': token " + tokenOfA + "; it is about to write balance 90");
            a.pause();
            nemesis.info(HistoryEvent.Op.PAUSE, a.name());
            say("A freezes (SIGSTOP): a stop-the-world GC pause, longer than its " + ttl.toSeconds() + " s lease");
            long waitStart = System.nanoTime();
            long tokenOfB = Long.parseLong(ask(b, "acquire", "granted").split(" ")[1]);
            say(String.format(Locale.ROOT, "A's lease expires; B waited %.1f s and acquires: token %d",
                    (System.nanoTime() - waitStart) / 1e9, tokenOfB));
            String answerToB = ask(b, "write 150", "written");
            say("B writes balance 150 with token " + tokenOfB + ": accepted (store revision "
                    + answerToB.split(" ")[1] + ")");
            a.send("write 90");
            a.resume();
            nemesis.info(HistoryEvent.Op.RESUME, a.name());
            say("A wakes up (SIGCONT), still believing it holds the lock, and writes balance 90 with token "
                    + tokenOfA);
            String answerToA = a.awaitLine(ANSWER_TIMEOUT);
            boolean refused = answerToA.startsWith("refused");
            say(refused ? "  -> REFUSED by the store: accepted token is " + answerToA.split(" ")[1]
                    + "\n     A's diagnosis: " + answerToA.substring(answerToA.indexOf(' ', 8) + 1)
                    : "  -> " + (answerToA.startsWith("written")
                            ? "ACCEPTED (store revision " + answerToA.split(" ")[1] + ")" : answerToA));
            String finalValue = ask(b, "read", "value").split(" ")[1];
            say("final balance: " + finalValue + (finalValue.equals("150") ? " (B's write stands)"
                    : " -- B's deposit is LOST, silently"));
            a.send("quit");
            b.send("quit");
            return new Act(fencing, tokenOfA, tokenOfB, answerToA, finalValue, refused);
        }
    }

    private ChildProcess client(Cluster cluster, String id, String lock, boolean fencing) throws IOException {
        WorkerOptions options = new WorkerOptions(id, cluster.lockEndpoints(), cluster.storeEndpoint(), lock,
                Workload.COUNTER, CLIENT_THINK_MAX, ttl, fencing,
                directory.resolve("history").resolve(id + ".jsonl"), originNanos, 0);
        return ChildProcess.start(id, launcher, WorkerArguments.clientCommand(options), directory.resolve("logs"),
                line -> { });
    }

    private static String ask(ChildProcess client, String command, String expected) {
        client.send(command);
        return await(client, expected);
    }

    private static String await(ChildProcess client, String expected) {
        String line = client.awaitLine(ANSWER_TIMEOUT);
        if (!line.startsWith(expected)) {
            throw new IllegalStateException(client.name() + " answered '" + line + "', expected " + expected);
        }
        return line;
    }

    private void summarize(Outcome outcome) {
        Act on = outcome.fenced();
        Act off = outcome.unfenced();
        say("");
        say("=== Summary ===");
        say(String.format(Locale.ROOT, "%-22s %-28s %s", "", "with fencing", "without fencing"));
        say(String.format(Locale.ROOT, "%-22s %-28s %s", "A's token (paused)", on.tokenOfA(), off.tokenOfA()));
        say(String.format(Locale.ROOT, "%-22s %-28s %s", "B's token", on.tokenOfB(), off.tokenOfB()));
        say(String.format(Locale.ROOT, "%-22s %-28s %s", "A's stale write",
                on.staleWriteRefused() ? "REFUSED (stale token)" : "accepted",
                off.staleWriteRefused() ? "refused" : "ACCEPTED"));
        say(String.format(Locale.ROOT, "%-22s %-28s %s", "final balance", on.finalValue() + " (B's write)",
                off.finalValue() + (off.finalValue().equals("150") ? "" : " (B's write lost)")));
        say("");
        say(outcome.asExpected()
                ? "The lease did not stop paused A in either run; only the token checked by the store did."
                : "UNEXPECTED: the demo did not show what it should; see the logs under " + directory);
    }

    private void writeTimeline(Path htmlFile, Outcome outcome) throws IOException {
        List<HistoryEvent> history = ChaosRun.mergeHistories(directory.resolve("history"));
        List<Violation> violations = new ArrayList<>();
        for (String process : List.of("A", "A-unfenced")) {
            for (HistoryEvent event : history) {
                if (event.process().equals(process) && event.op() == HistoryEvent.Op.WRITE
                        && event.type() == HistoryEvent.Type.OK) {
                    violations.add(new Violation(CheckResult.TOKENS_MONOTONIC, event.timeMicros(), process,
                            event.token(), "A's write under token " + event.token() + " was applied after B's "
                            + "under a higher token: B's write is lost"));
                }
            }
        }
        Map<String, Integer> byCheck = new LinkedHashMap<>();
        byCheck.put(CheckResult.TOKENS_MONOTONIC, violations.size());
        Map<String, Long> counts = new LinkedHashMap<>();
        counts.put("grants", history.stream().filter(e -> e.op() == HistoryEvent.Op.ACQUIRE
                && e.type() == HistoryEvent.Type.OK).count());
        counts.put("writes_refused", history.stream().filter(e -> e.op() == HistoryEvent.Op.WRITE
                && e.type() == HistoryEvent.Type.FAIL).count());
        violations.sort(Comparator.comparingLong(Violation::timeMicros));
        CheckResult result = new CheckResult(Workload.COUNTER, byCheck, violations, counts);
        TimelineReport.write(htmlFile, "fencer demo: a paused client, with and without fencing",
                List.of("A frozen past its " + ttl.toSeconds() + " s lease", "part 1: fencing on (A, B)",
                        "part 2: fencing off (A-unfenced, B-unfenced)",
                        outcome.asExpected() ? "as expected" : "unexpected outcome"), history, result);
    }

    private void say(String line) {
        out.println(line);
        out.flush();
    }
}
