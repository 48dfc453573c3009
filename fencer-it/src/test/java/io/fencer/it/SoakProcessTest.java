package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.Isolated;

/**
 * The soak: three lock peers as processes under churn (10,000 sessions opening, acquiring, releasing, closing or
 * expiring; {@link SoakChurn}) while the leader is killed -9 and restarted periodically. Every interval it samples
 * each peer's resident memory, heap after a full GC, open file descriptors, Raft log size on disk and the interval's
 * p99 acquire latency, and writes the curve to {@code target/soak/soak.csv}. It fails when a figure grows without
 * bound: a peer's last heap after GC, fds or Raft log more than twice its first (plus a small allowance), a peer
 * dead other than by the harness, or failed calls beyond a failover's share.
 *
 * <p>One hour by default; {@code -Dfencer.soak.duration=PT5M} for five minutes. Only in the soak tier, alone.
 */
@Tag(Soak.TAG)
@Isolated
class SoakProcessTest {
    static final String DURATION_PROPERTY = "fencer.soak.duration";
    private static final int SESSIONS_TOTAL = 10_000;
    private static final int THREADS = 8;
    private static final Duration RESTART_AFTER = Duration.ofSeconds(5);
    private static final Pattern USED_KIB = Pattern.compile("used (\\d+)K");
    private static final Pattern RSS_KIB = Pattern.compile("VmRSS:\\s+(\\d+) kB");

    @TempDir
    Path dir;
    private final List<FencerProcess> peers = new ArrayList<>();
    private final List<FencerProcess.Ports> ports = new ArrayList<>();
    private String group;
    private int restarts;

    /** One peer's figures at one sample. */
    record Sample(long elapsedMillis, String peer, long pid, boolean leader, long rssKib, long heapKib, long fds,
            long raftLogBytes, long dataBytes) {
    }

    @AfterEach
    void stopPeers() {
        peers.forEach(FencerProcess::close);
    }

    @Test
    void churn_threePeersWithLeaderKills_memoryFdsAndLogStayBounded() throws Exception {
        Duration run = Duration.parse(System.getProperty(DURATION_PROPERTY, "PT1H"));
        long sampleMillis = clamp(run.toMillis() / 20, 15_000, 180_000);
        long killMillis = clamp(run.toMillis() / 6, 60_000, 600_000);
        startGroup();
        Path csv = Files.createDirectories(Path.of("target", "soak")).resolve("soak.csv");
        List<Sample> samples = new ArrayList<>();
        int kills = 0;
        try (SoakChurn churn = new SoakChurn(ports.stream().map(FencerProcess.Ports::endpoint).toList());
             PrintWriter out = new PrintWriter(Files.newBufferedWriter(csv, StandardCharsets.UTF_8))) {
            out.println("elapsed_s,peer,pid,leader,rss_kib,heap_after_gc_kib,fds,raft_log_bytes,data_bytes,"
                    + "sessions_opened,sessions_abandoned,acquires,errors,p99_acquire_ms");
            long start = System.nanoTime();
            churn.start(THREADS, SESSIONS_TOTAL, run);
            long nextSample = sampleMillis;
            long nextKill = killMillis;
            while (elapsedMillis(start) < run.toMillis()) {
                TimeUnit.MILLISECONDS.sleep(Math.max(0, Math.min(nextSample, nextKill) - elapsedMillis(start)));
                if (elapsedMillis(start) >= nextKill && nextKill < run.toMillis()) {
                    killAndRestartLeader();
                    kills++;
                    nextKill += killMillis;
                }
                if (elapsedMillis(start) >= nextSample) {
                    double p99 = churn.takeP99Millis();
                    for (Sample sample : sample(elapsedMillis(start))) {
                        samples.add(sample);
                        out.println(String.format(Locale.ROOT, "%.1f,%s,%d,%s,%d,%d,%d,%d,%d,%d,%d,%d,%d,%.1f",
                                sample.elapsedMillis() / 1000.0, sample.peer(), sample.pid(), sample.leader(),
                                sample.rssKib(), sample.heapKib(), sample.fds(), sample.raftLogBytes(),
                                sample.dataBytes(), churn.sessionsOpened(), churn.sessionsAbandoned(),
                                churn.acquires(), churn.errors(), p99));
                    }
                    out.flush();
                    nextSample += sampleMillis;
                }
            }
            System.out.printf(Locale.ROOT, "soak: %s, %d sessions opened (%d left to expire), %d acquires, %d errors "
                    + "%s, %d leader kills; curve in %s%n", run, churn.sessionsOpened(), churn.sessionsAbandoned(),
                    churn.acquires(), churn.errors(), churn.errorSamples(), kills, csv.toAbsolutePath());
            assertThat(churn.acquires()).isPositive();
            assertThat(churn.errors()).as("failed calls: %s", churn.errorSamples())
                    .isLessThan(Math.max(50, churn.sessionsOpened() / 20));
        }
        assertThat(kills).as("leader kills").isGreaterThanOrEqualTo(1);
        for (int i = 0; i < peers.size(); i++) {
            assertThat(peers.get(i).isAlive()).as("n%d alive; log:%n%s", i + 1, peers.get(i).logText()).isTrue();
        }
        assertBounded(samples);
    }

    /** Fails when a peer's last sample grew past twice its first (of the same process), plus an allowance. */
    private static void assertBounded(List<Sample> samples) {
        Map<Long, Sample> first = new HashMap<>();
        Map<Long, Sample> last = new HashMap<>();
        for (Sample sample : samples) {
            first.putIfAbsent(sample.pid(), sample);
            last.put(sample.pid(), sample);
        }
        for (Map.Entry<Long, Sample> entry : last.entrySet()) {
            Sample from = first.get(entry.getKey());
            Sample to = entry.getValue();
            if (to == from) {
                continue; // one sample of this process: nothing to compare
            }
            assertThat(to.heapKib()).as("heap after GC of %s (pid %d)", to.peer(), to.pid())
                    .isLessThanOrEqualTo(2 * from.heapKib() + 32 * 1024);
            assertThat(to.fds()).as("open fds of %s", to.peer()).isLessThanOrEqualTo(2 * from.fds() + 64);
            assertThat(to.raftLogBytes()).as("Raft log of %s", to.peer())
                    .isLessThanOrEqualTo(2 * from.raftLogBytes() + (64L << 20));
        }
    }

    private List<Sample> sample(long elapsedMillis) throws Exception {
        List<Sample> samples = new ArrayList<>();
        for (int i = 0; i < peers.size(); i++) {
            FencerProcess peer = peers.get(i);
            if (!peer.isAlive()) {
                continue;
            }
            long pid = peer.pid();
            Path data = dir.resolve("n" + (i + 1));
            samples.add(new Sample(elapsedMillis, "n" + (i + 1), pid,
                    FencerProcess.health(ports.get(i).admin()).contains("\"role\":\"LEADER\""),
                    firstNumber(RSS_KIB, Files.readString(Path.of("/proc", Long.toString(pid), "status"))),
                    heapAfterGcKib(pid), fds(pid), bytes(data, true), bytes(data, false)));
        }
        return samples;
    }

    /** Returns the heap in use right after a full GC ({@code jcmd GC.run}, then {@code GC.heap_info}). */
    private static long heapAfterGcKib(long pid) throws Exception {
        jcmd(pid, "GC.run");
        long used = 0;
        for (String line : jcmd(pid, "GC.heap_info").split("\n")) {
            if (line.contains("Metaspace") || line.contains("class space")) {
                break;
            }
            Matcher matcher = USED_KIB.matcher(line);
            if (matcher.find() && !line.contains("space")) {
                used += Long.parseLong(matcher.group(1)); // the generations' lines, not their spaces'
            }
        }
        return used;
    }

    private static String jcmd(long pid, String command) throws Exception {
        Path jcmd = Path.of(System.getProperty("java.home"), "bin", "jcmd");
        Process process = new ProcessBuilder(jcmd.toString(), Long.toString(pid), command).redirectErrorStream(true)
                .start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        process.waitFor(60, TimeUnit.SECONDS);
        return output;
    }

    private static long fds(long pid) throws IOException {
        try (Stream<Path> fds = Files.list(Path.of("/proc", Long.toString(pid), "fd"))) {
            return fds.count();
        }
    }

    /** Returns the bytes of the Raft log's segments under {@code data} ({@code log}), or of every file there. */
    private static long bytes(Path data, boolean logOnly) throws IOException {
        try (Stream<Path> files = Files.walk(data)) {
            return files.filter(Files::isRegularFile)
                    .filter(file -> !logOnly || file.getFileName().toString().startsWith("log_"))
                    .mapToLong(file -> file.toFile().length()).sum();
        }
    }

    private static long firstNumber(Pattern pattern, String text) {
        Matcher matcher = pattern.matcher(text);
        return matcher.find() ? Long.parseLong(matcher.group(1)) : -1;
    }

    private void killAndRestartLeader() throws Exception {
        int leader = -1;
        for (int i = 0; i < peers.size() && leader < 0; i++) {
            if (FencerProcess.health(ports.get(i).admin()).contains("\"role\":\"LEADER\"")) {
                leader = i;
            }
        }
        if (leader < 0) {
            return; // an election in progress: the next kill comes at its time
        }
        peers.get(leader).kill9();
        TimeUnit.MILLISECONDS.sleep(RESTART_AFTER.toMillis());
        peers.set(leader, start(leader, "n" + (leader + 1) + "-" + ++restarts));
        peers.get(leader).awaitHealthy(ports.get(leader).admin());
    }

    private void startGroup() throws Exception {
        StringBuilder peersFlag = new StringBuilder();
        for (int i = 0; i < 3; i++) {
            FencerProcess.Ports p = FencerProcess.Ports.free();
            ports.add(p);
            peersFlag.append(i == 0 ? "" : ",").append("n").append(i + 1).append("=127.0.0.1:").append(p.client())
                    .append(':').append(p.raft());
        }
        group = peersFlag.toString();
        for (int i = 0; i < 3; i++) {
            peers.add(start(i, "n" + (i + 1)));
        }
        for (int i = 0; i < 3; i++) {
            peers.get(i).awaitHealthy(ports.get(i).admin());
        }
    }

    private FencerProcess start(int index, String name) throws IOException {
        String id = "n" + (index + 1);
        return FencerProcess.start(name, dir, List.of("server", "--data", dir.resolve(id).toString(),
                "--port", Integer.toString(ports.get(index).client()),
                "--admin-port", Integer.toString(ports.get(index).admin()),
                "--raft-port", Integer.toString(ports.get(index).raft()), "--http-port", "0", "--id", id,
                "--peers", group, "--raft-secret-file", dir.resolve("raft.secret").toString()));
    }

    private static long elapsedMillis(long startNanos) {
        return (System.nanoTime() - startNanos) / 1_000_000;
    }

    private static long clamp(long value, long min, long max) {
        return Math.max(min, Math.min(max, value));
    }
}
