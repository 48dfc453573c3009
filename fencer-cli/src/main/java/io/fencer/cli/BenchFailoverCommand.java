package io.fencer.cli;

import io.fencer.chaos.bench.FailoverBench;
import io.fencer.chaos.process.Launcher;
import java.io.IOException;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code fencer bench failover}: the failover pause of a group of lock peers it starts itself as processes, from
 * a leader's SIGKILL to the next grant, over several kills. Exit 1 when a round measured no pause, the killed peer
 * did not catch up, or a session was lost.
 */
@Command(name = "failover", mixinStandardHelpOptions = true,
        description = {"Starts --peers lock servers as processes (in a temporary directory, removed at the end), "
                + "runs acquire -> release on one lock through one session, and --kills times SIGKILLs the leader: "
                + "reports per kill the time until a new leader is known and until the next grant (the pause), and the "
                + "calls that failed meanwhile; restarts the killed peer and waits for it to catch up between kills."})
final class BenchFailoverCommand implements Callable<Integer> {
    @Option(names = "--peers", paramLabel = "N", defaultValue = "3",
            description = "Lock peers: 3 or 5 (default: ${DEFAULT-VALUE}).")
    int peers;

    @Option(names = "--kills", paramLabel = "N", defaultValue = "5",
            description = "Leader kills, 1 to 100 (default: ${DEFAULT-VALUE}).")
    int kills;

    @Option(names = "--ttl", paramLabel = "DURATION", defaultValue = "10s", converter = Durations.Converter.class,
            description = "The session's lease, 1s to 1h (default: ${DEFAULT-VALUE}); it should outlast a failover.")
    Duration ttl;

    @Option(names = "--json", description = "Print the summary as one JSON object (and nothing per kill).")
    boolean json;

    @Spec
    CommandSpec spec;

    /** The peers' JVM options: the heap the other bench figures give a server, and nothing else. */
    private static final List<String> PEER_JVM_OPTIONS = List.of("-Xmx512m");

    @Override
    public Integer call() throws IOException {
        FailoverBench.Settings settings = settings();
        PrintWriter out = spec.commandLine().getOut();
        if (!json) {
            out.printf(Locale.ROOT, "fencer bench failover: %d peers, %d leader kill%s, session ttl %s%n",
                    settings.peers(), settings.kills(), settings.kills() == 1 ? "" : "s",
                    Durations.format(settings.ttl()));
            out.flush();
        }
        // The peers run as `fencer server` does, with the full JIT, not the chaos harness's quick-start options.
        Launcher peers = Launcher.ofCurrentJvm(Main.class.getName(), PEER_JVM_OPTIONS);
        FailoverBench.Result result = FailoverBench.run(settings, peers,
                round -> {
                    if (!json) {
                        out.println(roundLine(round));
                        out.flush();
                    }
                });
        out.println(json ? toJson(result) : summary(result));
        out.flush();
        if (result.sessionsLost() > 0) {
            spec.commandLine().getErr().println("fencer: WARNING: " + result.sessionsLost() + " session"
                    + (result.sessionsLost() == 1 ? " was" : "s were") + " lost during failover with ttl "
                    + Durations.format(settings.ttl()) + ": a failover should not outlast a lease");
        }
        return result.complete() && result.sessionsLost() == 0 ? Main.EXIT_OK : Main.EXIT_ERROR;
    }

    private FailoverBench.Settings settings() {
        if (peers != 3 && peers != 5) {
            throw new ParameterException(spec.commandLine(),
                    "--peers must be 3 or 5, not " + peers);
        }
        BenchCommand.checkRange(spec, "--kills", kills, 1, FailoverBench.Settings.KILLS_MAX);
        if (ttl.compareTo(FailoverBench.Settings.TTL_MIN) < 0 || ttl.compareTo(FailoverBench.Settings.TTL_MAX) > 0) {
            throw new ParameterException(spec.commandLine(), "--ttl " + Durations.format(ttl)
                    + " is outside [" + Durations.format(FailoverBench.Settings.TTL_MIN) + ", "
                    + Durations.format(FailoverBench.Settings.TTL_MAX) + "]");
        }
        return new FailoverBench.Settings(peers, kills, ttl);
    }

    /** Returns one round's line: kill → new leader, kill → next grant, failed calls. */
    static String roundLine(FailoverBench.Round round) {
        return String.format(Locale.ROOT, "kill %d (%s): kill -> new leader %s, kill -> next grant %s, failed calls %d"
                + "%s%s", round.number(), round.killedPeer(), millis(round.leaderKnownMillis()),
                millis(round.pauseMillis()), round.failedCalls(),
                round.sessionsLost() == 0 ? "" : ", SESSION LOST x" + round.sessionsLost(),
                round.caughtUp() ? "" : ", restarted peer DID NOT CATCH UP");
    }

    private static String millis(long value) {
        return value < 0 ? "none (timed out)" : value + " ms";
    }

    /** Returns the human summary: median, min and max of the pauses, failed calls, sessions lost. */
    static String summary(FailoverBench.Result result) {
        String pauses = result.pausesMillis().stream().map(String::valueOf).collect(Collectors.joining(", "));
        return String.format(Locale.ROOT, "pause (kill -> next grant) ms: median %d  min %d  max %d  (%s)%n"
                + "new leader known ms: median %d%nfailed calls: %d%nsessions lost: %d",
                result.medianPauseMillis(), result.minPauseMillis(), result.maxPauseMillis(), pauses,
                result.medianLeaderKnownMillis(), result.failedCalls(), result.sessionsLost());
    }

    /** Returns the machine-readable summary. */
    static Json toJson(FailoverBench.Result result) {
        return Json.object()
                .add("peers", result.settings().peers())
                .add("kills", result.settings().kills())
                .add("ttlMillis", result.settings().ttl().toMillis())
                .addLongs("pausesMillis", result.pausesMillis())
                .add("medianPauseMillis", result.medianPauseMillis())
                .add("minPauseMillis", result.minPauseMillis())
                .add("maxPauseMillis", result.maxPauseMillis())
                .addLongs("leaderKnownMillis", result.leaderKnownMillis())
                .add("failedCalls", result.failedCalls())
                .add("sessionsLost", result.sessionsLost())
                .addObjects("rounds", result.rounds().stream().map(round -> Json.object()
                        .add("killedPeer", round.killedPeer())
                        .add("leaderKnownMillis", round.leaderKnownMillis())
                        .add("pauseMillis", round.pauseMillis())
                        .add("failedCalls", round.failedCalls())
                        .add("sessionsLost", round.sessionsLost())
                        .add("caughtUp", round.caughtUp())).toList())
                .addLongs("processIds", result.processIds());
    }
}
