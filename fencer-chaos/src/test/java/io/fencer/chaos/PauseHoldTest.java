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
 * A pause is held until another worker wrote after the freeze. The workers here are real processes (a shell that
 * prints a worker's control lines on a timetable), frozen with SIGSTOP as a chaos run freezes its workers.
 * Regression: a chaos run on a busy machine resumed a paused worker before the lock had passed on, and the control
 * run of a fixed seed found no violation.
 */
class PauseHoldTest {
    private static final Launcher SHELL = new Launcher(List.of("sh", "-c"));
    /** A worker that reads under a grant 1 s after it starts, then does nothing. */
    private static final String READS_AT_1S = "sleep 1; echo read 1; exec sleep 60";

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

    private WorkerHandle worker(String id, String script, HistoryLog nemesis) throws Exception {
        WorkerHandle worker = new WorkerHandle(id, dir.resolve(id + ".jsonl"), SHELL, dir.resolve("logs"), nemesis,
                incarnation -> List.of(script));
        worker.start();
        return worker;
    }
}
