package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code fencer bench failover} as a user runs it: a real process that starts three lock peers as processes, kills
 * the leader with SIGKILL, measures the pause until the next grant, restarts the killed peer and waits for it to
 * catch up, and leaves no process behind. No timing bound is asserted: the machine is shared.
 */
class BenchFailoverProcessTest {
    @TempDir
    Path dir;

    @Test
    void benchFailover_threePeersOneKill_measuresOnePauseRestartsPeerAndLeavesNoProcess() throws Exception {
        JsonObject summary;
        try (FencerProcess bench = FencerProcess.start("bench-failover", dir,
                List.of("bench", "failover", "--peers", "3", "--kills", "1", "--json"))) {
            int status = bench.awaitExit(Duration.ofMinutes(3));
            String output = String.join("\n", bench.lines());

            assertThat(status).as("exit status; output:\n%s\nlog:\n%s", output, bench.logText()).isZero();
            summary = JsonParser.parseString(output.strip()).getAsJsonObject();
        }

        assertThat(summary.get("peers").getAsInt()).isEqualTo(3);
        assertThat(summary.get("kills").getAsInt()).isEqualTo(1);
        JsonArray pauses = summary.getAsJsonArray("pausesMillis");
        assertThat(pauses).as("one pause measured").hasSize(1);
        assertThat(pauses.get(0).getAsLong()).as("the pause").isPositive();
        assertThat(summary.get("medianPauseMillis").getAsLong()).isEqualTo(pauses.get(0).getAsLong());
        assertThat(summary.getAsJsonArray("leaderKnownMillis")).as("a new leader was known").hasSize(1);
        assertThat(summary.get("failedCalls").getAsInt()).isNotNegative();
        assertThat(summary.get("sessionsLost").getAsInt()).as("sessions lost with ttl 10 s").isZero();
        JsonObject round = summary.getAsJsonArray("rounds").get(0).getAsJsonObject();
        assertThat(round.get("killedPeer").getAsString()).startsWith("lock-n");
        assertThat(round.get("caughtUp").getAsBoolean()).as("the killed peer restarted and caught up").isTrue();
        List<Long> processIds = summary.getAsJsonArray("processIds").asList().stream()
                .map(JsonElement::getAsLong).toList();
        assertThat(processIds).as("three peers and the restarted one").hasSize(4).doesNotHaveDuplicates();
        for (long processId : processIds) {
            Optional<ProcessHandle> handle = ProcessHandle.of(processId);
            assertThat(handle.map(ProcessHandle::isAlive).orElse(false)).as("peer process %d still running",
                    processId).isFalse();
        }
    }
}
