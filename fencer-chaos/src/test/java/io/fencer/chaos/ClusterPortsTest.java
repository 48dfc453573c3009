package io.fencer.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/**
 * Regression: a three-peer chaos run failed to start ("Failed to bind to address /127.0.0.1:45925") because a port
 * chosen from the ephemeral range was taken, before its server bound it, as the local port of some process's
 * outgoing connection. The harness now chooses its servers' ports below that range.
 */
class ClusterPortsTest {
    @Test
    void freePorts_chosen_areBelowTheEphemeralRangeDistinctAndBindable() throws IOException {
        int[] ports = FreePorts.choose(12);

        assertThat(ports).doesNotHaveDuplicates();
        assertThat(Arrays.stream(ports).boxed()).allMatch(port -> port >= 20_000 && port < 32_768);
        for (int port : ports) {
            try (ServerSocket socket = new ServerSocket()) {
                socket.bind(new InetSocketAddress(ServerArguments.LOOPBACK, port));
                assertThat(socket.getLocalPort()).isEqualTo(port);
            }
        }
    }
}
