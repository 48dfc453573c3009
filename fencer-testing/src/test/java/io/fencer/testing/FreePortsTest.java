package io.fencer.testing;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

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

    @Test
    void choose_countOutOfRange_throwsNamingTheCount() {
        assertThatThrownBy(() -> FreePorts.choose(0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(": 0");
        assertThatThrownBy(() -> FreePorts.choose(1_001)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("1000: 1001");
    }
}
