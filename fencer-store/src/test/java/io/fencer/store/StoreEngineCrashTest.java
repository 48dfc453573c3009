package io.fencer.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.fencer.core.FencingToken;
import io.fencer.core.StaleTokenException;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Invariant 4 under kill -9: a separate process writes from 32 threads and prints each acknowledged write; it is
 * killed with SIGKILL mid-stream; after a reopen every acknowledged write is present, no refused write is, and
 * every scope still refuses the tokens below what it had accepted.
 */
class StoreEngineCrashTest {
    private static final int THREADS = 32;
    private static final int SCOPES = 4;
    private static final int ACKS_BEFORE_KILL = 400;
    /** What RocksDB's info log says when it reuses a write-ahead log file (db_impl_open.cc, CreateWAL). */
    private static final String WAL_REUSED = "reusing log";
    private static final Pattern LINE = Pattern.compile("(ACK|REFUSED) (\\S+) (\\d+) end");

    @TempDir
    Path dir;

    /** One outcome the child printed. */
    private record Outcome(boolean acknowledged, String scope, long token) {}

    @Test
    void write_killedWithSigkillMidStream_keepsEveryAcknowledgedWriteAndNoRefusedOne() throws Exception {
        killMidStreamAndVerify(0, () -> true);
    }

    /**
     * The store reuses obsolete write-ahead log files ({@link StoreDatabase#RECYCLED_WAL_FILES}): a reused file
     * still holds the records of its earlier life past the new ones, and recovery must stop where the new ones
     * end. Large values rotate the log every few hundred writes; the kill comes only after RocksDB's own log says
     * it reused a file, so the reuse was exercised.
     */
    @Test
    void write_killedAfterWalFilesWereReused_keepsEveryAcknowledgedWriteAndNoRefusedOne() throws Exception {
        Path infoLog = dir.resolve("store").resolve("LOG");
        killMidStreamAndVerify(64 * 1024, () -> Files.exists(infoLog)
                && Files.readString(infoLog, StandardCharsets.ISO_8859_1).contains(WAL_REUSED));
    }

    private void killMidStreamAndVerify(int valueBytes, Callable<Boolean> readyToKill) throws Exception {
        Path store = dir.resolve("store");
        Process child = startChild(store, valueBytes);
        List<Outcome> outcomes = new ArrayList<>();
        AtomicInteger acknowledged = new AtomicInteger();
        Thread reader = new Thread(() -> readOutcomes(child, outcomes, acknowledged), "child-stdout");
        reader.start();
        try {
            await().atMost(Duration.ofMinutes(3)).until(() -> !child.isAlive()
                    || acknowledged.get() >= ACKS_BEFORE_KILL && readyToKill.call());
            assertThat(child.isAlive()).as("the child must still be writing; see " + dir.resolve("child.err")).isTrue();
            assertThat(readyToKill.call()).as("the condition to kill on").isTrue();
            child.destroyForcibly(); // SIGKILL on Linux: no shutdown hook, no close
            assertThat(child.waitFor(60, TimeUnit.SECONDS)).isTrue();
            assertThat(child.exitValue()).as("killed by signal 9").isEqualTo(128 + 9);
        } finally {
            child.destroyForcibly();
        }
        reader.join(TimeUnit.SECONDS.toMillis(60));
        assertThat(reader.isAlive()).isFalse();

        List<Outcome> printed;
        synchronized (outcomes) {
            printed = List.copyOf(outcomes);
        }
        long acks = printed.stream().filter(Outcome::acknowledged).count();
        System.out.printf("child printed %d acknowledged and %d refused writes before SIGKILL%n", acks,
                printed.size() - acks);
        assertThat(acks).isGreaterThanOrEqualTo(ACKS_BEFORE_KILL);
        try (StoreEngine reopened = StoreEngine.open(store, StoreOptions.defaults())) {
            verify(reopened, printed);
        }
    }

    private void verify(StoreEngine store, List<Outcome> printed) {
        Map<String, Long> highestAcknowledged = new HashMap<>();
        for (Outcome outcome : printed) {
            byte[] key = ("t" + outcome.token()).getBytes(StandardCharsets.UTF_8);
            ReadResult read = store.get(outcome.scope(), key, null);
            if (outcome.acknowledged()) {
                assertThat(read.present()).as("acknowledged %s#%d", outcome.scope(), outcome.token()).isTrue();
                assertThat(read.writtenBy()).isEqualTo(outcome.token());
                highestAcknowledged.merge(outcome.scope(), outcome.token(), Math::max);
            } else {
                assertThat(read.present()).as("refused %s#%d", outcome.scope(), outcome.token()).isFalse();
            }
        }
        for (Map.Entry<String, Long> scope : highestAcknowledged.entrySet()) {
            long accepted = store.accepted(scope.getKey());
            assertThat(accepted).isGreaterThanOrEqualTo(scope.getValue());
            if (accepted > 1) {
                assertThatThrownBy(() -> store.write(scope.getKey(),
                        new FencingToken(scope.getKey(), accepted - 1).sequencer(),
                        List.of(Op.put(new byte[] {1}, new byte[] {1})), null))
                        .isInstanceOfSatisfying(StaleTokenException.class,
                                e -> assertThat(e.accepted()).isEqualTo(accepted));
            }
        }
        assertThat(highestAcknowledged).hasSize(SCOPES);
    }

    private Process startChild(Path store, int valueBytes) throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        String classPath = System.getProperty("java.class.path");
        ProcessBuilder builder = new ProcessBuilder(java, "-ea", "-Xmx256m",
                "-Djava.io.tmpdir=" + dir, // the RocksDB native library a killed JVM leaves behind goes with dir
                "-cp", classPath, CrashWriterMain.class.getName(), store.toString(),
                Integer.toString(THREADS), Integer.toString(SCOPES), Integer.toString(valueBytes));
        builder.redirectError(dir.resolve("child.err").toFile());
        return builder.start();
    }

    private static void readOutcomes(Process child, List<Outcome> outcomes, AtomicInteger acknowledged) {
        try (BufferedReader lines = new BufferedReader(
                new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line = lines.readLine(); line != null; line = lines.readLine()) {
                Matcher matcher = LINE.matcher(line);
                if (!matcher.matches()) {
                    continue; // READY, or a line cut by the kill: only complete lines are claims
                }
                boolean ack = matcher.group(1).equals("ACK");
                synchronized (outcomes) {
                    outcomes.add(new Outcome(ack, matcher.group(2), Long.parseLong(matcher.group(3))));
                }
                if (ack) {
                    acknowledged.incrementAndGet();
                }
            }
        } catch (java.io.IOException e) {
            // the pipe closes when the child dies
        }
    }
}
