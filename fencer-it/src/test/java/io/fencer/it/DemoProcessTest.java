package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.ResourceAccessMode;
import org.junit.jupiter.api.parallel.ResourceLock;

/**
 * {@code fencer demo} as a user runs it: a real process that starts the servers and the two clients as processes,
 * freezes A with SIGSTOP, and shows A's stale write refused with fencing and silently applied without.
 */
@ResourceLock(value = TestResources.CHAOS, mode = ResourceAccessMode.READ)
class DemoProcessTest {
    @TempDir
    Path dir;

    @Test
    void demo_pausedClient_isRefusedWithFencingAndOverwritesWithout() throws Exception {
        Path html = dir.resolve("demo.html");
        try (FencerProcess demo = FencerProcess.start("demo", dir, List.of("demo", "--dir",
                dir.resolve("run").toString(), "--html", html.toString()))) {
            int status = demo.awaitExit(Duration.ofMinutes(4));
            String output = String.join("\n", demo.lines());

            assertThat(status).as("exit status; output:\n%s\nlog:\n%s", output, demo.logText()).isZero();
            assertThat(output).contains("-> REFUSED by the store", "SUPERSEDED", "B's deposit is LOST",
                    "final balance: 150 (B's write stands)");
            assertThat(Files.readString(html)).contains("<svg", "A-unfenced");
        }
    }
}
