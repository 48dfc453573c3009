package io.fencer.server.raft;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.net.BindException;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import org.junit.jupiter.api.Test;

/** The hold on "any free" Raft port between its choice and the transport's bind. */
class PortReservationTest {
    private static final int BINDS = 20_000;

    /**
     * Regression: the port was found by binding 0 and closing at once, and bound only once Ratis started, so a bind to
     * port 0 anywhere on the machine in between could take it and the peer failed to start.
     */
    @Test
    void any_whileHeld_noBindTakesThePortAndConnectionsAreRefused() throws IOException {
        InetAddress loopback = InetAddress.getByName("127.0.0.1");
        try (PortReservation reserved = PortReservation.any("127.0.0.1")) {
            int port = reserved.port();

            int taken = 0;
            for (int i = 0; i < BINDS; i++) {
                try (ServerSocket server = new ServerSocket(0, 1, loopback)) {
                    taken += server.getLocalPort() == port ? 1 : 0;
                }
            }

            assertThat(port).isPositive();
            assertThat(taken).as("binds to port 0 that got the held port").isZero();
            assertThat(bindsExplicitly(loopback, port)).as("an explicit bind to the held port succeeds").isFalse();
            try (Socket client = new Socket()) {
                assertThatThrownBy(() -> client.connect(new InetSocketAddress(loopback, port), 2_000))
                        .isInstanceOf(ConnectException.class).hasMessageContaining("refused");
            }
        }
    }

    /** The control: let go, the same port binds, so the hold was what refused it. */
    @Test
    void close_thenTheListenerBindsThePort() throws IOException {
        InetAddress loopback = InetAddress.getByName("127.0.0.1");
        PortReservation reserved = PortReservation.any("127.0.0.1");
        int port = reserved.port();

        reserved.close();
        reserved.close(); // a second close, as RaftNode's after the transport's, does nothing

        assertThat(bindsExplicitly(loopback, port)).isTrue();
    }

    @Test
    void any_unknownHost_failsNamingIt() {
        assertThatThrownBy(() -> PortReservation.any("no-such-host.invalid"))
                .isInstanceOf(IOException.class).hasMessageContaining("no-such-host.invalid");
    }

    private static boolean bindsExplicitly(InetAddress address, int port) throws IOException {
        try (ServerSocket server = new ServerSocket()) {
            server.setReuseAddress(true);
            server.bind(new InetSocketAddress(address, port));
            return true;
        } catch (BindException e) {
            return false;
        }
    }
}
