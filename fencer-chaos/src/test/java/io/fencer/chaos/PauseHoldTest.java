package io.fencer.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.chaos.history.HistoryLog;
import io.fencer.chaos.process.Launcher;
import io.fencer.chaos.process.WorkerHandle;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A pause lands between a worker's read and its write, and is held until another worker wrote after the freeze. The
 * workers here are real processes (a shell that speaks a worker's control lines on a timetable), frozen with SIGSTOP
 * as a chaos run freezes its workers. Regressions: a chaos run on a busy machine resumed a paused worker before the
 * lock had passed on; and a worker whose think was short wrote before the freeze that its plain read line asked for.
 * Either way the control run of a fixed seed found no violation.
 */
class PauseHoldTest {
    private static final Launcher SHELL = new Launcher(List.of("sh", "-c"));
    /** A worker that, asked to hold, reads under a grant 1 s later and waits for its go, then does nothing. */
    private static final String READS_AT_1S = "read hold; sleep 1; echo read 1 held; read go; exec sleep 60";

    @TempDir
    Path dir;

    @Test
    void untilAnotherWrote_otherWorkerWritesAfterTheFreeze_holdsThePauseUntilThatWrite() throws Exception {
        try (HistoryLog nemesis = HistoryLog.open(dir.resolve("nemesis.jsonl"), "nemesis", System.nanoTime());
                WorkerHandle paused = worker("w1", READS_AT_1S, nemesis);
                WorkerHandle writer = worker("w2", "sleep 3; echo wrote 2; exec sleep 60", nemesis)) {
            assertThat(paused.pauseAfterNextRead(Duration.ofSeconds(10))).as("frozen after its read").isTrue();
            long scheduledEndNanos = System.nanoTime();
            ByteArrayOutputStream narration = new ByteArrayOutputStream();

            boolean wrote = PauseHold.untilAnotherWrote(paused, List.of(paused, writer), Duration.ofSeconds(20),
                    new PrintStream(narration, true, StandardCharsets.UTF_8));

            assertThat(wrote).isTrue();
            assertThat(writer.lastWriteNanos() - paused.frozenNanos()).as("the write came after the freeze")
                    .isPositive();
            assertThat(System.nanoTime() - scheduledEndNanos).as("held past the scheduled end")
                    .isGreaterThan(Duration.ofMillis(1_000).toNanos());
            assertThat(narration.toString(StandardCharsets.UTF_8)).contains("w1 held", "until another worker wrote");
        }
    }

    @Test
    void untilAnotherWrote_otherWorkerWroteOnlyBeforeTheFreeze_holdsUntilMaxThenResumes() throws Exception {
        try (HistoryLog nemesis = HistoryLog.open(dir.resolve("nemesis.jsonl"), "nemesis", System.nanoTime());
                WorkerHandle paused = worker("w1", READS_AT_1S, nemesis);
                WorkerHandle writer = worker("w2", "echo wrote 1; exec sleep 60", nemesis)) {
            assertThat(paused.pauseAfterNextRead(Duration.ofSeconds(10))).isTrue();
            assertThat(writer.lastWriteNanos()).as("the control: w2 did write, before the freeze").isPositive();
            long scheduledEndNanos = System.nanoTime();
            ByteArrayOutputStream narration = new ByteArrayOutputStream();

            boolean wrote = PauseHold.untilAnotherWrote(paused, List.of(paused, writer), Duration.ofMillis(700),
                    new PrintStream(narration, true, StandardCharsets.UTF_8));

            assertThat(wrote).isFalse();
            assertThat(System.nanoTime() - scheduledEndNanos).isGreaterThanOrEqualTo(Duration.ofMillis(700).toNanos());
            assertThat(narration.toString(StandardCharsets.UTF_8))
                    .contains("no other worker wrote within 700 ms more: w1 resumes");
        }
    }

    @Test
    void pauseAfterNextRead_workerWritesRightAfterItsRead_freezesItBeforeTheWrite() throws Exception {
        try (HistoryLog nemesis = HistoryLog.open(dir.resolve("nemesis.jsonl"), "nemesis", System.nanoTime());
                WorkerHandle worker = worker("w1", "read hold; echo read 1 held; read go; echo wrote 1;"
                        + " exec sleep 60", nemesis)) {
            assertThat(worker.pauseAfterNextRead(Duration.ofSeconds(10))).as("frozen after its read").isTrue();
            Thread.sleep(500);
            assertThat(worker.lastWriteNanos()).as("no write while frozen, though it writes at once").isZero();

            worker.resume();

            long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            while (worker.lastWriteNanos() == 0 && System.nanoTime() - deadline < 0) {
                Thread.sleep(20);
            }
            assertThat(worker.lastWriteNanos() - worker.frozenNanos()).as("the write came after the freeze")
                    .isPositive();
        }
    }

    /** The control: a worker that never holds after its read is frozen wherever it is, and the harness says so. */
    @Test
    void pauseAfterNextRead_workerThatDoesNotHold_isFrozenWhereverAndSaysSo() throws Exception {
        try (HistoryLog nemesis = HistoryLog.open(dir.resolve("nemesis.jsonl"), "nemesis", System.nanoTime());
                WorkerHandle worker = worker("w1", "echo read 1; echo wrote 1; exec sleep 60", nemesis)) {
            assertThat(worker.pauseAfterNextRead(Duration.ofMillis(700))).isFalse();
            assertThat(worker.frozenNanos()).as("frozen all the same").isPositive();
            assertThat(worker.lastReadNanos()).isPositive();
            worker.resume();
        }
    }

    private WorkerHandle worker(String id, String script, HistoryLog nemesis) throws Exception {
        WorkerHandle worker = new WorkerHandle(id, dir.resolve(id + ".jsonl"), SHELL, dir.resolve("logs"), nemesis,
                incarnation -> List.of(script));
        worker.start();
        return worker;
    }
}
