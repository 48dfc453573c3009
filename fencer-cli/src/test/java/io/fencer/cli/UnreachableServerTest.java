package io.fencer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.testing.FreePorts;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * What a first run without a server looks like: a refused connection or an unknown host fails in about a second,
 * naming the address and what to do; a server that accepts connections and never answers fails after --timeout; a
 * read never claims it may have taken effect.
 */
class UnreachableServerTest {
    /** A second to give up, plus the machine's noise; the default call timeout (10 s) would exceed it. */
    private static final Duration FAST = Duration.ofMillis(4_500);

    @Test
    void lockStatus_noServerOnThePort_failsWithinSecondsNamingTheAddressAndHowToStartOne() {
        // a FreePorts port, which no bind to port 0 can take meanwhile, unlike one bound to 0 and closed
        String endpoint = "127.0.0.1:" + FreePorts.one();

        long startNanos = System.nanoTime();
        CommandRun run = CommandRun.run("lock", "status", "--server", endpoint);
        Duration took = Duration.ofNanos(System.nanoTime() - startNanos);

        assertThat(run.exitCode()).as(run.err()).isEqualTo(Main.EXIT_ERROR);
        assertThat(run.err()).contains("cannot connect to " + endpoint, "connection refused",
                "is a server running? start one with ./fencer server").doesNotContain("may or may not");
        assertThat(took).as("time to fail").isLessThan(FAST);
    }

    @Test
    void kvGet_noStoreOnThePort_failsWithinSecondsNamingTheAddress() {
        String endpoint = "127.0.0.1:" + FreePorts.one();

        long startNanos = System.nanoTime();
        CommandRun run = CommandRun.run("kv", "get", "orders", "total", "--store", endpoint);
        Duration took = Duration.ofNanos(System.nanoTime() - startNanos);

        assertThat(run.exitCode()).as(run.err()).isEqualTo(Main.EXIT_ERROR);
        assertThat(run.err()).contains("cannot connect to the store at " + endpoint, "connection refused",
                "start one with ./fencer server").doesNotContain("may or may not");
        assertThat(took).as("time to fail").isLessThan(FAST);
    }

    @Test
    void lockStatus_unknownHost_failsWithinSecondsSayingSo() {
        long startNanos = System.nanoTime();
        CommandRun run = CommandRun.run("lock", "status", "--server", "no-such-host.invalid:7070");
        Duration took = Duration.ofNanos(System.nanoTime() - startNanos);

        assertThat(run.exitCode()).as(run.err()).isEqualTo(Main.EXIT_ERROR);
        assertThat(run.err()).contains("no-such-host.invalid:7070", "unknown host", "check the host name")
                .doesNotContain("may or may not");
        assertThat(took).as("time to fail").isLessThan(FAST);
    }

    @Test
    void lockStatus_silentServerAndTimeout_failsAfterTheTimeoutSayingNothingWasSent() throws Exception {
        try (SilentServer silent = new SilentServer()) {
            long startNanos = System.nanoTime();
            CommandRun run = CommandRun.run("lock", "status", "--server", silent.endpoint(), "--timeout", "2s");
            Duration took = Duration.ofNanos(System.nanoTime() - startNanos);

            assertThat(silent.accepted()).as("the control: the command did connect; %s", run.err()).isPositive();
            assertThat(run.exitCode()).as(run.err()).isEqualTo(Main.EXIT_ERROR);
            // A socket that accepts and never speaks gives gRPC no connection ready for a call: none was sent.
            assertThat(run.err()).contains("cannot connect to " + silent.endpoint() + " (connection not ready, for ",
                    "nothing was sent").doesNotContain("may or may not", "start one with");
            // the wall time says the budget was --timeout's; it adds the close of a connection that never answers
            // and a loaded machine's noise
            assertThat(took).as("time to fail").isGreaterThanOrEqualTo(Duration.ofSeconds(2));
        }
    }

    @Test
    void help_clientCommands_stateTheTimeoutAndItsDefault() {
        for (String[] command : List.of(new String[] {"lock", "status"}, new String[] {"lock", "exec"},
                new String[] {"kv", "get"}, new String[] {"sem", "exec"})) {
            List<String> args = new ArrayList<>(List.of(command));
            args.add("--help");
            CommandRun run = CommandRun.run(args.toArray(String[]::new));

            assertThat(run.out()).as(String.join(" ", command)).contains("--timeout=DURATION", "(default: 10s)");
        }
    }

    /** Accepts TCP connections on 127.0.0.1 and never answers: a server that hangs. */
    private static final class SilentServer implements AutoCloseable {
        private final ServerSocket socket = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        private final List<Socket> connections = new ArrayList<>();
        private final Thread acceptor = new Thread(this::acceptAll, "silent-server");

        SilentServer() throws IOException {
            acceptor.setDaemon(true);
            acceptor.start();
        }

        String endpoint() {
            return "127.0.0.1:" + socket.getLocalPort();
        }

        synchronized int accepted() {
            return connections.size();
        }

        private void acceptAll() {
            while (!socket.isClosed()) {
                try {
                    Socket connection = socket.accept();
                    synchronized (this) {
                        connections.add(connection);
                    }
                } catch (IOException closed) {
                    return;
                }
            }
        }

        @Override
        public void close() throws IOException {
            socket.close();
            synchronized (this) {
                for (Socket connection : connections) {
                    connection.close();
                }
            }
        }
    }
}
