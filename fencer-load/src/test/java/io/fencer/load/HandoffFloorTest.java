package io.fencer.load;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The bare hand-off's runs on a real file system, with real syncs and loopback connections. */
class HandoffFloorTest {
    private static final Duration WINDOW = Duration.ofMillis(800);
    private static final Duration WARMUP = Duration.ofMillis(200);

    @TempDir
    Path directory;

    @Test
    void run_syncOn_handsOffInTurnWithASyncForEveryGrant() throws Exception {
        HandoffFloor.Result result = HandoffFloor.run(new HandoffFloor.Settings(8, 0, true, false, directory, WINDOW,
                WARMUP));

        assertHandedOffInTurnAfterSyncs(result);
        assertThat(result.handOffsPerSecond()).isEqualTo(result.handOffs() / 0.8);
        assertThat(logFiles()).as("the run's log is removed").isZero();
    }

    @Test
    void run_noSync_handsOffWithoutSyncing() throws Exception {
        HandoffFloor.Result result = HandoffFloor.run(new HandoffFloor.Settings(8, 0, false, false, directory, WINDOW,
                WARMUP));

        assertThat(result.error()).isNull();
        assertThat(result.violations()).isZero();
        assertThat(result.handOffs()).isPositive();
        assertThat(result.syncs()).isZero();
    }

    @Test
    void run_hops_handsOffInTurnThroughEveryThread() throws Exception {
        HandoffFloor.Result result = HandoffFloor.run(new HandoffFloor.Settings(8, 3, true, false, directory, WINDOW,
                WARMUP));

        assertHandedOffInTurnAfterSyncs(result);
    }

    @Test
    void run_clientIoThread_handsOffInTurnThroughTheSharedThread() throws Exception {
        HandoffFloor.Result result = HandoffFloor.run(new HandoffFloor.Settings(8, 1, true, true, directory, WINDOW,
                WARMUP));

        assertHandedOffInTurnAfterSyncs(result);
        assertThat(logFiles()).as("the run's log is removed").isZero();
    }

    @Test
    void run_directoryMissing_createsItAndRemovesItAfter() throws Exception {
        Path missing = directory.resolve("a").resolve("data");

        HandoffFloor.Result result = HandoffFloor.run(new HandoffFloor.Settings(2, 0, true, false, missing,
                Duration.ofMillis(200), Duration.ZERO));

        assertThat(result.error()).isNull();
        assertThat(result.handOffs()).isPositive();
        assertThat(directory.resolve("a")).doesNotExist();
    }

    @Test
    void settings_outOfRange_failNamingTheValue() {
        assertThatThrownBy(() -> new HandoffFloor.Settings(0, 0, true, false, directory, WINDOW, WARMUP))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("clients 0 is outside [1, 1024]");
        assertThatThrownBy(() -> new HandoffFloor.Settings(1, 17, true, false, directory, WINDOW, WARMUP))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("hops 17 is outside [0, 16]");
        assertThatThrownBy(() -> new HandoffFloor.Settings(1, 0, true, false, directory, Duration.ZERO, WARMUP))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("duration must be positive");
    }

    @Test
    void result_nothingHandedOff_hasNoTimePerHandOff() {
        HandoffFloor.Result result = new HandoffFloor.Result(new HandoffFloor.Settings(1, 0, true, false, directory,
                Duration.ofSeconds(2), WARMUP), 0, 0, 0, "server: down");

        assertThat(result.handOffsPerSecond()).isZero();
        assertThat(result.microsPerHandOff()).isNaN();
    }

    /**
     * Asserts that the run handed the lock off, never to two holders or with a reused token, and answered each grant
     * only after a commit whose record was synced (a commit grants at most once). One grant may fall on the window's
     * start with its sync before it, hence the one spared.
     */
    private static void assertHandedOffInTurnAfterSyncs(HandoffFloor.Result result) {
        assertThat(result.error()).isNull();
        assertThat(result.violations()).isZero();
        assertThat(result.handOffs()).isPositive();
        assertThat(result.syncs()).isGreaterThanOrEqualTo(result.handOffs() - 1);
    }

    private long logFiles() throws IOException {
        try (Stream<Path> files = Files.list(directory)) {
            return files.count();
        }
    }
}
