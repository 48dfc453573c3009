package io.fencer.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class FreePortsTest {
    @Test
    void choose_manyPorts_returnsDistinctBindablePortsBelowTheEphemeralRange() throws IOException {
        int[] ports = FreePorts.choose(12);

        assertThat(Arrays.stream(ports).distinct().count()).isEqualTo(12);
        assertThat(Arrays.stream(ports).boxed()).allSatisfy(port -> assertThat(port).isBetween(20_000, 32_767));
        for (int port : ports) {
            try (ServerSocket socket = new ServerSocket()) {
                socket.bind(new InetSocketAddress("127.0.0.1", port));
                assertThat(socket.getLocalPort()).isEqualTo(port);
            }
        }
    }

    @Test
    void one_aPort_isBindable() throws IOException {
        int port = FreePorts.one();

        try (ServerSocket socket = new ServerSocket()) {
            socket.bind(new InetSocketAddress("127.0.0.1", port));
            assertThat(socket.getLocalPort()).isEqualTo(port);
        }
    }

    /**
     * Regression: a module's two test JVMs drew ports from the same range blind, and a peer group's server failed to
     * bind a port the other JVM had just chosen ("Address already in use").
     */
    @Test
    void choose_whileAnotherJvmHoldsThePortsItChose_neverReturnsOneOfThem(@TempDir Path dir) throws Exception {
        try (HolderProcess other = HolderProcess.start(dir, "claimer", PortClaimer.class, "1000")) {
            String line = other.awaitLine("ports ", Duration.ofSeconds(60));
            Set<Integer> theirs = Arrays.stream(line.substring("ports ".length()).split(",")).map(Integer::valueOf)
                    .collect(Collectors.toSet());
            assertThat(theirs).hasSize(1_000);
            assertThat(theirs).as("the other JVM holds the claim on each of its ports")
                    .allMatch(FreePorts::claimedByAnotherProcess);

            int[] ours = FreePorts.choose(1_000);

            // Drawn blind from the 12,768 ports below the ephemeral range, two sets of 1,000 share about 78.
            assertThat(Arrays.stream(ours).boxed().toList()).doesNotContainAnyElementsOf(theirs);
            other.kill9();
            assertThat(theirs).as("the kernel dropped the claims of the killed JVM")
                    .noneMatch(FreePorts::claimedByAnotherProcess);
        }
    }

    @Test
    void choose_countOutOfRange_throwsNamingTheCount() {
        assertThatThrownBy(() -> FreePorts.choose(0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(": 0");
        assertThatThrownBy(() -> FreePorts.choose(1_001)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("1000: 1001");
    }
}
