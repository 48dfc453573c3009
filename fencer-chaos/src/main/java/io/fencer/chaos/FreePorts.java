package io.fencer.chaos;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Free ports for servers whose ports are named before they bind them (peers list each other's ports; a killed server
 * restarts on its own), chosen below the kernel's ephemeral range so that no outgoing connection can take one
 * meanwhile.
 */
public final class FreePorts {
    /** The first port of the kernel's default ephemeral range (ip_local_port_range: 32768 60999). */
    private static final int EPHEMERAL_PORT_FIRST = 32_768;
    private static final int CHOSEN_PORT_FIRST = 20_000;
    private static final int CHOSEN_PORT_ATTEMPTS = 200;

    private FreePorts() {}

    /**
     * Returns {@code count} distinct ports that were free a moment ago, below the ephemeral range where it can (see
     * {@link #bindBelowEphemeralRange}).
     */
    public static int[] choose(int count) {
        List<ServerSocket> sockets = new ArrayList<>();
        try {
            int[] ports = new int[count];
            for (int i = 0; i < count; i++) {
                ServerSocket socket = bindBelowEphemeralRange();
                sockets.add(socket);
                ports[i] = socket.getLocalPort();
            }
            return ports;
        } catch (IOException e) {
            throw new UncheckedIOException("no free port", e);
        } finally {
            for (ServerSocket socket : sockets) {
                try {
                    socket.close();
                } catch (IOException ignored) {
                    // nothing to do
                }
            }
        }
    }

    /**
     * Binds a free port below the ephemeral range. A server is started on its ports after they are chosen (and
     * restarted on them after a kill); a port from the ephemeral range may meanwhile be taken as the local port of
     * an outgoing connection of any process (a bind failure seen under load: {@code ChaosProcessTest}'s regression),
     * while ports below that range are only ever taken by an explicit bind. Falls back to an ephemeral port.
     */
    private static ServerSocket bindBelowEphemeralRange() throws IOException {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        for (int attempt = 0; attempt < CHOSEN_PORT_ATTEMPTS; attempt++) {
            ServerSocket socket = new ServerSocket();
            try {
                socket.bind(new InetSocketAddress(ServerArguments.LOOPBACK, random.nextInt(CHOSEN_PORT_FIRST,
                        EPHEMERAL_PORT_FIRST)));
                return socket;
            } catch (IOException taken) {
                socket.close();
            }
        }
        return new ServerSocket(0);
    }
}
