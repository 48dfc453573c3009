package io.fencer.chaos.process;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.chaos.history.HistoryEvent;
import io.fencer.chaos.history.HistoryJson;
import io.fencer.chaos.history.HistoryLog;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * How the harness records the kills of a worker (a real process, {@code sleep}, which ignores the closed input that
 * asks a worker to stop): a fault's kill apart from the kill of a worker that did not stop when the run ended.
 */
class WorkerHandleTest {
    @TempDir
    Path dir;

    @Test
    void awaitStop_workerStillRunningAfterTheTimeout_recordsAKillAtTheEndOfTheRun() throws IOException {
        Path nemesisFile = dir.resolve("nemesis.jsonl");
        try (HistoryLog nemesis = HistoryLog.open(nemesisFile, "nemesis", System.nanoTime());
             WorkerHandle worker = sleepingWorker(nemesis)) {
            worker.start();
            worker.requestStop();
            worker.awaitStop(Duration.ofMillis(100));
        }

        assertThat(HistoryJson.read(nemesisFile)).singleElement().satisfies(kill -> {
            assertThat(kill.op()).isEqualTo(HistoryEvent.Op.KILL);
            assertThat(kill.target()).isEqualTo("w1");
            assertThat(kill.value()).as("the end-of-run mark").isEqualTo("end-of-run");
        });
    }

    @Test
    void kill_runningWorker_recordsAFaultKill() throws IOException {
        Path nemesisFile = dir.resolve("nemesis.jsonl");
        try (HistoryLog nemesis = HistoryLog.open(nemesisFile, "nemesis", System.nanoTime());
             WorkerHandle worker = sleepingWorker(nemesis)) {
            worker.start();
            worker.kill();
        }

        assertThat(HistoryJson.read(nemesisFile)).singleElement().satisfies(kill -> {
            assertThat(kill.op()).isEqualTo(HistoryEvent.Op.KILL);
            assertThat(kill.target()).isEqualTo("w1");
            assertThat(kill.value()).as("no end-of-run mark").isEmpty();
        });
    }

    private WorkerHandle sleepingWorker(HistoryLog nemesis) {
        return new WorkerHandle("w1", dir.resolve("w1.jsonl"), new Launcher(List.of("sleep")), dir.resolve("logs"),
                nemesis, incarnation -> List.of("600"));
    }
}
