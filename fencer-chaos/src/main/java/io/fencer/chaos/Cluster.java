package io.fencer.chaos;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The servers of a run as real processes: one lock server or a group of peers, and one store server, each with
 * its own data directory and ports on 127.0.0.1. Kills are SIGKILL; restarts reuse the data directory and ports,
 * so durability is what is tested.
 */
final class Cluster implements AutoCloseable {
    private static final Duration START_TIMEOUT = Duration.ofSeconds(90);
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    /** The store's name in the history and the report. */
    static final String STORE = "store";
    /** Every server binds the loopback address: the run is one machine's processes. */
    private static final String HOST = "127.0.0.1";

    private final Launcher launcher;
    private final Path directory;
    private final List<Server> lockServers = new ArrayList<>();
    private final Server store;

    /** One server: its name, ports, arguments and, while it runs, its process. */
    private static final class Server {
        final String name;
        final int clientPort;
        final int adminPort;
        final List<String> arguments;
        ChildProcess process;

        Server(String name, int clientPort, int adminPort, List<String> arguments) {
            this.name = name;
            this.clientPort = clientPort;
            this.adminPort = adminPort;
            this.arguments = List.copyOf(arguments);
        }
    }

    Cluster(Launcher launcher, Path directory, int peers) {
        if (peers != 1 && peers != 3 && peers != 5) {
            throw new IllegalArgumentException("peers must be 1, 3 or 5, not " + peers);
        }
        this.launcher = launcher;
        this.directory = directory;
        int[][] ports = new int[peers][];
        List<ServerArguments.Peer> group = new ArrayList<>();
        for (int i = 0; i < peers; i++) {
            ports[i] = freePorts(3);
            group.add(new ServerArguments.Peer("n" + (i + 1), HOST, ports[i][0], ports[i][2]));
        }
        for (int i = 0; i < peers; i++) {
            String id = "n" + (i + 1);
            ServerArguments arguments = new ServerArguments(directory.resolve(id), ports[i][0], ports[i][1],
                    ports[i][2], id, peers > 1 ? group : List.of());
            lockServers.add(new Server("lock-" + id, ports[i][0], ports[i][1], arguments.toArguments()));
        }
        int[] storePorts = freePorts(2);
        store = new Server(STORE, storePorts[0], storePorts[1],
                new StoreServerArguments(directory.resolve(STORE), storePorts[0], storePorts[1]).toArguments());
    }

    /** Starts every server and waits until each is healthy (the lock service has a leader). */
    void start() throws IOException {
        for (Server server : lockServers) {
            launch(server);
        }
        launch(store);
        for (Server server : lockServers) {
            awaitHealthy(server);
        }
        awaitHealthy(store);
    }

    List<String> lockEndpoints() {
        return lockServers.stream().map(server -> HOST + ":" + server.clientPort).toList();
    }

    String storeEndpoint() {
        return HOST + ":" + store.clientPort;
    }

    /** Returns the lock servers' names, {@code lock-n1} ... */
    List<String> lockServerNames() {
        return lockServers.stream().map(server -> server.name).toList();
    }

    /**
     * Kills the lock service's leader (the only server, or the peer that says it leads; the first running one
     * when none does) with SIGKILL; returns its name.
     */
    String killLockLeader() {
        Server victim = null;
        for (Server server : lockServers) {
            if (server.process != null && server.process.isAlive()) {
                HttpResponse<String> health = health(server.adminPort);
                if (victim == null || health != null && health.body().contains("\"role\":\"LEADER\"")) {
                    victim = server;
                }
            }
        }
        if (victim == null) {
            throw new IllegalStateException("no lock server runs");
        }
        victim.process.kill();
        return victim.name;
    }

    /** Starts the lock server {@code name} again from its data directory; does not wait for it. */
    void restartLock(String name) throws IOException {
        for (Server server : lockServers) {
            if (server.name.equals(name)) {
                launch(server);
                return;
            }
        }
        throw new IllegalArgumentException("no lock server named " + name);
    }

    void killStore() {
        store.process.kill();
    }

    /** Starts the store again from its data directory and waits until it serves. */
    void restartStore() throws IOException {
        launch(store);
        awaitHealthy(store);
    }

    /** Waits until the store serves (after a restart that raced with the end of the run). */
    void awaitStore() {
        awaitHealthy(store);
    }

    private void launch(Server server) throws IOException {
        if (server.process != null && server.process.isAlive()) {
            throw new IllegalStateException(server.name + " is already running");
        }
        server.process = ChildProcess.start(server.name, launcher, server.arguments, directory, line -> { });
    }

    private static void awaitHealthy(Server server) {
        long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
        while (System.nanoTime() - deadline < 0) {
            if (!server.process.isAlive()) {
                throw new IllegalStateException(server.name + " exited while starting; its log ends:\n"
                        + server.process.logTail());
            }
            if (healthStatus(server.adminPort) == 200) {
                return;
            }
            Worker.pause(100);
        }
        throw new IllegalStateException(server.name + " not healthy within " + START_TIMEOUT + "; its log ends:\n"
                + server.process.logTail());
    }

    private static int healthStatus(int adminPort) {
        HttpResponse<String> response = health(adminPort);
        return response == null ? -1 : response.statusCode();
    }

    /** Returns the answer to {@code /healthz}, or null when the server does not answer. */
    private static HttpResponse<String> health(int adminPort) {
        try {
            return HTTP.send(request(adminPort), HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }

    private static HttpRequest request(int adminPort) {
        return HttpRequest.newBuilder(URI.create("http://" + HOST + ":" + adminPort + "/healthz"))
                .timeout(Duration.ofSeconds(2)).build();
    }

    /** Returns {@code count} ports that were free a moment ago. */
    static int[] freePorts(int count) {
        List<ServerSocket> sockets = new ArrayList<>();
        try {
            int[] ports = new int[count];
            for (int i = 0; i < count; i++) {
                ServerSocket socket = new ServerSocket(0);
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

    /** Kills every server still running. */
    @Override
    public void close() {
        for (Server server : lockServers) {
            if (server.process != null) {
                server.process.close();
            }
        }
        if (store.process != null) {
            store.process.close();
        }
    }
}
