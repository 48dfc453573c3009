package io.fencer.client.internal;

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

/** The fixture's refused endpoint: what the tests of a call that cannot connect stand on. */
class FakeServerTest {
    private static final int BINDS = 20_000;

    /**
     * Regression: the endpoint's port was closed once chosen, and a server elsewhere that bound port 0 took it; CI's
     * call then met that server ("UNIMPLEMENTED: Method not found") where the test expected a refusal.
     */
    @Test
    void refusedEndpoint_whileServersBindPortZero_staysRefusedAndNoneOfThemGetsIt() throws IOException {
        int port = port(FakeServer.refusedEndpoint());
        InetAddress loopback = InetAddress.getByName("127.0.0.1");

        int taken = 0;
        for (int i = 0; i < BINDS; i++) {
            try (ServerSocket server = new ServerSocket(0, 1, loopback)) {
                taken += server.getLocalPort() == port ? 1 : 0;
            }
        }

        assertThat(taken).as("binds to port 0 that got the refused endpoint's port").isZero();
        // what keeps them off: the port is bound, so the kernel refuses a bind to it, explicit or not
        try (ServerSocket server = new ServerSocket()) {
            server.setReuseAddress(true);
            assertThatThrownBy(() -> server.bind(new InetSocketAddress(loopback, port)))
                    .isInstanceOf(BindException.class);
        }
        try (Socket client = new Socket()) {
            assertThatThrownBy(() -> client.connect(new InetSocketAddress(loopback, port), 2_000))
                    .isInstanceOf(ConnectException.class).hasMessageContaining("refused");
        }
    }

    private static int port(String endpoint) {
        return Integer.parseInt(endpoint.substring(endpoint.lastIndexOf(':') + 1));
    }
}
