package io.fencer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.load.HandoffFloor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code fencer bench floor}: its reports, its limits, and a short run on a real file system. */
class BenchFloorCommandTest {
    @TempDir
    Path directory;

    @Test
    void text_cleanRun_reportsRateTimePerHandOffAndSyncs() {
        HandoffFloor.Result result = new HandoffFloor.Result(new HandoffFloor.Settings(64, 4, true, false, directory,
                Duration.ofSeconds(2), Duration.ofSeconds(1)), 10_000, 10_000, 0, null);

        assertThat(BenchFloorCommand.text(result))
                .startsWith("fencer bench floor: 64 clients on one lock, 4 extra server threads, a sync per commit, in "
                        + directory.toAbsolutePath() + "; 2s measured after 1s warmup")
                .contains("hand-offs:     10000  5000.0/s  (200.0 us each)")
                .contains("log syncs:     10000")
                .endsWith("violations:    0");
    }

    @Test
    void json_nothingHandedOff_hasNullTimeAndTheError() {
        HandoffFloor.Result result = new HandoffFloor.Result(new HandoffFloor.Settings(1, 0, false, false, directory,
                Duration.ofSeconds(1), Duration.ZERO), 0, 0, 0, "server: java.io.IOException: No space left on device");

        assertThat(BenchFloorCommand.toJson(result).toString()).contains("\"clients\":1", "\"hops\":0",
                "\"sync\":false", "\"clientIoThread\":false", "\"handOffs\":0", "\"handOffsPerSecond\":0.000",
                "\"microsPerHandOff\":null",
                "\"syncs\":0", "\"violations\":0", "\"error\":\"server: java.io.IOException: No space left on device\"");
    }

    @Test
    void call_shortRun_handsOffAndRemovesItsLog() throws Exception {
        CommandRun run = CommandRun.run("bench", "floor", "--data", directory.toString(), "--clients", "4",
                "--duration", "500ms", "--warmup", "100ms", "--json");

        assertThat(run.exitCode()).as(run.err()).isZero();
        assertThat(run.out()).contains("\"violations\":0", "\"error\":null").doesNotContain("\"handOffs\":0,");
        try (var files = Files.list(directory)) {
            assertThat(files).isEmpty();
        }
    }

    @Test
    void call_directoryUnwritable_failsNamingItAndTheCause() throws Exception {
        Path file = Files.writeString(directory.resolve("a-file"), "not a directory");

        CommandRun run = CommandRun.run("bench", "floor", "--data", file.toString(), "--duration", "1s");

        assertThat(run.exitCode()).isEqualTo(1);
        assertThat(run.err()).contains("fencer: bench floor could not run in " + file.toAbsolutePath() + ": ",
                "FileAlreadyExistsException");
        assertThat(Files.readString(file)).isEqualTo("not a directory");
    }

    @Test
    void call_hopsOutOfRange_failsNamingTheValue() {
        CommandRun run = CommandRun.run("bench", "floor", "--data", directory.toString(), "--hops", "17");

        assertThat(run.exitCode()).isEqualTo(2);
        assertThat(run.err()).contains("--hops 17 is outside [0, 16]");
    }
}
