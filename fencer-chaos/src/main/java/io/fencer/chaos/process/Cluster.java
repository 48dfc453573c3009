package io.fencer.chaos.process;

import com.google.gson.JsonElement;
import com.google.gson.JsonParser;
import io.fencer.core.SkewedTicker;
import io.fencer.testing.FreePorts;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The servers of a run as real processes: one lock server or a group of peers, and one store server (none when the
 * workload's store is the peers' replicated store), each with its own data directory and ports on 127.0.0.1, or, in
 * a run with network faults, on its own host of the run's {@link Network} (lock peer {@code n1} on host {@code n1},
 * the store on host {@code store}). Kills are SIGKILL; restarts reuse the data directory and ports, so durability is
 * what is tested.
 */
public final class Cluster implements AutoCloseable {
    private static final Duration START_TIMEOUT = Duration.ofSeconds(90);
    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();
    /** The store's name in the history and the report. */
    public static final String STORE = "store";
    /**
     * The group secret of a group of lock peers, one file for all: the peer that starts first makes it, the others
     * read it (they may start at the same moment: the file is made atomically).
     */
    static final String RAFT_SECRET_FILE = "raft.secret";
    /** Without a network every server binds the loopback address: the run is one machine's processes. */
    private static final String LOOPBACK = "127.0.0.1";

    private final Path directory;
    /**
     * The lock group's current members (voters and a learner), in the order they joined: a membership change adds
     * a spare here once the group added it and takes a peer out once the group removed it, so every fault that
     * addresses the leader or the peers addresses the current membership.
     */
    private final List<Server> lockServers = new CopyOnWriteArrayList<>();
    /** Spare peers started with {@code --join} that the group has not added yet, by id. */
    private final Map<String, Server> spares = new ConcurrentHashMap<>();
    /** Peers the group removed: their processes were killed for good. */
    private final List<Server> retired = new CopyOnWriteArrayList<>();
    private final Network network;
    private final Launcher lockLauncher;
    /**
     * The store server; null in a group of lock peers alone ({@link #lockGroup}) and when the workload's store is the
     * peers' replicated store ({@link #replicatedStore()}).
     */
    private final Server store;
    /** True when the workload's store is the lock peers' replicated store: its leader is the group's leader. */
    private final boolean replicatedStore;
    private final List<Long> startedLockProcessIds = new CopyOnWriteArrayList<>();
    /** Set by {@link #close()}, which a shutdown hook may call while another thread starts a server. */
    private volatile boolean closed;

    /** One server: its name, network host, address, ports, launcher, arguments and, while it runs, its process. */
    private static final class Server {
        final String name;
        final String hostName;
        final String address;
        final int clientPort;
        final int adminPort;
        final Launcher launcher;
        final List<String> arguments;
        /** The Raft port of a spare (the founders' are in their arguments); 0 for the others. */
        int raftPort;
        ChildProcess process;

        Server(String name, String hostName, String address, int clientPort, int adminPort, Launcher launcher,
                List<String> arguments) {
            this.name = name;
            this.hostName = hostName;
            this.address = address;
            this.clientPort = clientPort;
            this.adminPort = adminPort;
            this.launcher = launcher;
            this.arguments = List.copyOf(arguments);
        }
    }

    public Cluster(Launcher launcher, Path directory, int peers) {
        this(launcher, directory, peers, null, List.of());
    }

    /**
     * A cluster whose servers run on {@code network}'s hosts (null: all on the loopback address), its lock peers
     * started with the extra JVM options {@code lockJvmOptions}.
     */
    public Cluster(Launcher launcher, Path directory, int peers, Network network, List<String> lockJvmOptions) {
        this(launcher, directory, peers, network, lockJvmOptions, true, null, false);
    }

    /**
     * As {@link #Cluster(Launcher, Path, int, Network, List)}, each lock peer reading its clock from the file of its
     * host name in {@code clockDirectory} ({@link #clockFile}; see {@code io.fencer.core.SkewedTicker}).
     */
    public Cluster(Launcher launcher, Path directory, int peers, Network network, List<String> lockJvmOptions,
            Path clockDirectory) {
        this(launcher, directory, peers, network, lockJvmOptions, true, clockDirectory, false);
    }

    /**
     * A group of {@code peers} (3 or 5) lock peers on {@code network}'s hosts (null: the loopback) whose replicated
     * store is the workload's store: no store server runs, {@link #storeEndpoint()} lists every peer, and
     * {@link #killStore()} kills the group's leader. Each peer reads its clock from {@code clockDirectory} unless null.
     */
    public static Cluster withReplicatedStore(Launcher launcher, Path directory, int peers, Network network,
            List<String> lockJvmOptions, Path clockDirectory) {
        if (peers < 3) {
            throw new IllegalArgumentException("the replicated store needs 3 or 5 peers, not " + peers);
        }
        return new Cluster(launcher, directory, peers, network, lockJvmOptions, true, clockDirectory, true);
    }

    /**
     * A group of {@code peers} lock servers on the loopback address without a store server, each started with
     * {@code --no-store} (the failover bench measures the lock service alone).
     */
    public static Cluster lockGroup(Launcher launcher, Path directory, int peers) {
        return new Cluster(launcher, directory, peers, null, List.of(), false, null, false);
    }

    private Cluster(Launcher launcher, Path directory, int peers, Network network, List<String> lockJvmOptions,
            boolean withStore, Path clockDirectory, boolean replicatedStore) {
        if (peers != 1 && peers != 3 && peers != 5) {
            throw new IllegalArgumentException("peers must be 1, 3 or 5, not " + peers);
        }
        this.directory = directory;
        this.network = network;
        this.replicatedStore = replicatedStore;
        int[][] ports = new int[peers][];
        List<ServerArguments.Peer> group = new ArrayList<>();
        for (int i = 0; i < peers; i++) {
            ports[i] = FreePorts.choose(3);
            group.add(new ServerArguments.Peer("n" + (i + 1), address(network, "n" + (i + 1)), ports[i][0],
                    ports[i][2]));
        }
        this.lockLauncher = lockJvmOptions.isEmpty() ? launcher : launcher.withJvmOptions(lockJvmOptions);
        for (int i = 0; i < peers; i++) {
            String id = "n" + (i + 1);
            String address = address(network, id);
            ServerArguments arguments = new ServerArguments(directory.resolve(id), ports[i][0], ports[i][1],
                    ports[i][2], id, peers > 1 ? group : List.of(), address,
                    peers > 1 ? directory.resolve(RAFT_SECRET_FILE) : null);
            List<String> lockArguments = new ArrayList<>(arguments.toArguments());
            if (!withStore) {
                lockArguments.add("--no-store");
            }
            Launcher peerLauncher = clockDirectory == null ? lockLauncher
                    : lockLauncher.withJvmOptions(List.of(clockOption(clockDirectory.resolve(id))));
            lockServers.add(new Server("lock-" + id, id, address, ports[i][0], ports[i][1],
                    on(network, id, peerLauncher), lockArguments));
        }
        if (!withStore || replicatedStore) {
            store = null;
            return;
        }
        int[] storePorts = FreePorts.choose(2);
        String storeAddress = address(network, STORE);
        store = new Server(STORE, STORE, storeAddress, storePorts[0], storePorts[1], on(network, STORE, launcher),
                new StoreServerArguments(directory.resolve(STORE), storePorts[0], storePorts[1], storeAddress)
                        .toArguments());
    }

    /** Returns the JVM option that makes a process read its clock from {@code clockFile}. */
    public static String clockOption(Path clockFile) {
        return "-D" + SkewedTicker.CLOCK_FILE_PROPERTY + "=" + clockFile.toAbsolutePath();
    }

    private static String address(Network network, String hostName) {
        return network == null ? LOOPBACK : network.host(hostName).address();
    }

    private static Launcher on(Network network, String hostName, Launcher launcher) {
        return network == null ? launcher : network.launcherOn(hostName, launcher);
    }

    /** Starts every server and waits until each is healthy (the lock service has a leader). */
    public void start() throws IOException {
        launch();
        awaitStarted();
    }

    /** Starts every server's process, without waiting for any ({@link #awaitStarted}). */
    public void launch() throws IOException {
        for (Server server : lockServers) {
            launch(server);
        }
        if (store != null) {
            launch(store);
        }
    }

    /** Waits until every server {@link #launch launched} is healthy (the lock service has a leader). */
    public void awaitStarted() {
        for (Server server : lockServers) {
            awaitHealthy(server);
        }
        if (store != null) {
            awaitHealthy(store);
        }
    }

    public List<String> lockEndpoints() {
        return lockServers.stream().map(server -> server.address + ":" + server.clientPort).toList();
    }

    /**
     * Returns the workload's store: the store server's {@code host:port}, or, with the replicated store, every lock
     * peer's client address, comma-separated (the store client follows the leader among them).
     */
    public String storeEndpoint() {
        return replicatedStore ? String.join(",", lockEndpoints()) : store.address + ":" + store.clientPort;
    }

    /** Returns true when the workload's store is the lock peers' replicated store. */
    public boolean replicatedStore() {
        return replicatedStore;
    }

    /** Returns the lock peers' network host names, {@code n1} ... */
    public List<String> lockHostNames() {
        return lockServers.stream().map(server -> server.hostName).toList();
    }

    /**
     * Returns the network host name of the lock peer that says it leads ({@code n2}); when none says so, of the
     * first running one.
     */
    public String leaderHostName() {
        return leader().hostName;
    }

    /** Returns the running peer that says it leads; the first running one when none does. */
    private Server leader() {
        Server leader = null;
        for (Server server : lockServers) {
            if (server.process != null && server.process.isAlive()) {
                HttpResponse<String> health = health(server);
                if (leader == null || health != null && health.body().contains("\"role\":\"LEADER\"")) {
                    leader = server;
                    if (health != null && health.body().contains("\"role\":\"LEADER\"")) {
                        return server;
                    }
                }
            }
        }
        if (leader == null) {
            throw new IllegalStateException("no lock server runs");
        }
        return leader;
    }

    /** Returns the lock servers' names, {@code lock-n1} ... */
    List<String> lockServerNames() {
        return lockServers.stream().map(server -> server.name).toList();
    }

    /**
     * Kills the lock service's leader (the only server, or the peer that says it leads; the first running one
     * when none does) with SIGKILL; returns its name.
     */
    public String killLockLeader() {
        Server victim = leader();
        victim.process.kill();
        return victim.name;
    }

    /** Starts the lock server {@code name} again from its data directory; does not wait for it. */
    public void restartLock(String name) throws IOException {
        for (Server server : lockServers) {
            if (server.name.equals(name)) {
                launch(server);
                return;
            }
        }
        throw new IllegalArgumentException("no lock server named " + name);
    }

    /**
     * Kills the store with SIGKILL and returns the killed process's name: the store server ({@link #STORE}), or, with
     * the replicated store, the group's leader (as {@link #killLockLeader()}), which leads the store.
     */
    public String killStore() {
        if (replicatedStore) {
            return killLockLeader();
        }
        store.process.kill();
        return STORE;
    }

    /**
     * Starts the store process {@code name} ({@link #killStore()}'s answer) again from its data directory and waits
     * until it serves: with the replicated store, until the restarted peer knows a leader.
     */
    public void restartStore(String name) throws IOException {
        if (replicatedStore) {
            restartLock(name);
            awaitHealthy(lockServer(name));
            return;
        }
        launch(store);
        awaitHealthy(store);
    }

    /**
     * Waits until the store serves (after a restart that raced with the end of the run): the store server, or every
     * running lock peer of a replicated store.
     */
    public void awaitStore() {
        if (!replicatedStore) {
            awaitHealthy(store);
            return;
        }
        for (Server server : lockServers) {
            if (server.process != null && server.process.isAlive()) {
                awaitHealthy(server);
            }
        }
    }

    private void launch(Server server) throws IOException {
        if (server.process != null && server.process.isAlive()) {
            throw new IllegalStateException(server.name + " is already running");
        }
        if (closed) {
            throw new IllegalStateException("the cluster is closed: " + server.name + " is not started");
        }
        server.process = ChildProcess.start(server.name, server.launcher, server.arguments, directory, line -> { });
        if (server != store) {
            startedLockProcessIds.add(server.process.pid());
        }
        if (closed) {
            server.process.close(); // close() ran meanwhile and may have missed this process
            throw new IllegalStateException("the cluster is closed: " + server.name + " is not started");
        }
    }

    private static void awaitHealthy(Server server) {
        long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
        while (System.nanoTime() - deadline < 0) {
            if (!server.process.isAlive()) {
                throw new IllegalStateException(server.name + " exited while starting; its log ends:\n"
                        + server.process.logTail());
            }
            if (healthStatus(server) == 200) {
                return;
            }
            pause(100);
        }
        throw new IllegalStateException(server.name + " not healthy within " + START_TIMEOUT + "; its log ends:\n"
                + server.process.logTail());
    }

    private static int healthStatus(Server server) {
        HttpResponse<String> response = health(server);
        return response == null ? -1 : response.statusCode();
    }

    /** Returns the answer to {@code /healthz}, or null when the server does not answer. */
    private static HttpResponse<String> health(Server server) {
        try {
            return HTTP.send(request(server), HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }

    private static HttpRequest request(Server server) {
        return HttpRequest.newBuilder(URI.create("http://" + server.address + ":" + server.adminPort + "/healthz"))
                .timeout(Duration.ofSeconds(2)).build();
    }

    /** Kills every server still running. */
    @Override
    public void close() {
        closed = true;
        List<Server> lockProcesses = new ArrayList<>(lockServers);
        lockProcesses.addAll(spares.values());
        lockProcesses.addAll(retired);
        for (Server server : lockProcesses) {
            if (server.process != null) {
                server.process.close();
            }
        }
        if (store != null && store.process != null) {
            store.process.close();
        }
    }

    /**
     * Returns the name of the running lock peer whose {@code /healthz} says it leads, or null when none says so.
     */
    public String reportedLockLeader() {
        for (Server server : lockServers) {
            if (server.process != null && server.process.isAlive() && isLeader(health(server))) {
                return server.name;
            }
        }
        return null;
    }

    private static boolean isLeader(HttpResponse<String> health) {
        return health != null && health.statusCode() == 200 && health.body().contains("\"role\":\"LEADER\"");
    }

    /** Kills the lock server {@code name} with SIGKILL and waits until it is gone. */
    public void killLock(String name) {
        lockServer(name).process.kill();
    }

    /** Returns whether every lock server runs and knows a leader ({@code /healthz} answers 200). */
    public boolean lockGroupWhole() {
        for (Server server : lockServers) {
            if (server.process == null || !server.process.isAlive() || healthStatus(server) != 200) {
                return false;
            }
        }
        return true;
    }

    /** Waits until the lock server {@code name} answers healthy (a leader is known to it). */
    public void awaitLockHealthy(String name) {
        awaitHealthy(lockServer(name));
    }

    /**
     * Returns the index of the last log entry the lock server {@code name} applied, from its {@code /healthz}, or
     * -1 when it does not answer.
     */
    public long appliedIndex(String name) {
        HttpResponse<String> health = health(lockServer(name));
        if (health == null) {
            return -1;
        }
        try {
            JsonElement index = JsonParser.parseString(health.body()).getAsJsonObject().get("appliedIndex");
            return index == null ? -1 : index.getAsLong();
        } catch (RuntimeException unreadable) {
            return -1;
        }
    }

    /** Returns the process ids of the lock servers started so far, every incarnation of each. */
    public List<Long> lockProcessIds() {
        return List.copyOf(startedLockProcessIds);
    }

    private Server lockServer(String name) {
        for (Server server : lockServers) {
            if (server.name.equals(name)) {
                return server;
            }
        }
        throw new IllegalArgumentException("no lock server named " + name);
    }

    /**
     * Starts the spare lock peer {@code id} with {@code --join} (the group's current client addresses), its own data
     * directory and ports, on its network host {@code id} when the run has a network; does not wait for it
     * ({@link #awaitSpareWaiting}). The group does not know it until {@link #admit}.
     */
    public void launchSpare(String id, Duration joinWait) throws IOException {
        if (spares.containsKey(id) || lockServers.stream().anyMatch(server -> server.hostName.equals(id))) {
            throw new IllegalStateException("lock peer " + id + " already exists");
        }
        int[] ports = FreePorts.choose(3);
        String address = address(network, id);
        ServerArguments arguments = new ServerArguments(directory.resolve(id), ports[0], ports[1], ports[2], id,
                List.of(), address, directory.resolve(RAFT_SECRET_FILE));
        Server spare = new Server("lock-" + id, id, address, ports[0], ports[1], on(network, id, lockLauncher),
                arguments.toJoinArguments(lockEndpoints(), joinWait));
        spare.raftPort = ports[2];
        spares.put(id, spare);
        launch(spare);
    }

    /** Returns whether the spare {@code id} was launched, is not yet admitted, and still runs. */
    public boolean spareRunning(String id) {
        Server spare = spares.get(id);
        return spare != null && spare.process != null && spare.process.isAlive();
    }

    /**
     * Waits until the spare {@code id} says it waits to be added (it asked the group and listens on its Raft port).
     *
     * @throws IllegalStateException naming the spare and its log's tail when it exited or did not say so in time
     */
    public void awaitSpareWaiting(String id, Duration timeout) {
        Server spare = spare(id);
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!spare.process.logTail().contains("waits to be added")) {
            if (!spare.process.isAlive() || System.nanoTime() - deadline > 0) {
                throw new IllegalStateException(spare.name + (spare.process.isAlive() ? " did not wait to be added "
                        + "within " + timeout : " exited while joining") + "; its log ends:\n"
                        + spare.process.logTail());
            }
            pause(100);
        }
    }

    /** Returns the spare's Raft address as the other peers dial it, {@code host:port}. */
    public String spareRaftAddress(String id) {
        Server spare = spare(id);
        return spare.address + ":" + spare.raftPort;
    }

    /** Returns the spare's client address, {@code host:port}. */
    public String spareClientAddress(String id) {
        Server spare = spare(id);
        return spare.address + ":" + spare.clientPort;
    }

    /** Makes the spare {@code id}, which the group added, a member: faults and workers now address it. */
    public void admit(String id) {
        lockServers.add(spare(id));
        spares.remove(id);
    }

    /** Kills a spare the group never added (it failed to start, or is given up) and forgets it. */
    public void discardSpare(String id) {
        Server spare = spares.remove(id);
        if (spare != null && spare.process != null) {
            spare.process.close();
        }
    }

    /**
     * Takes the member {@code id}, which the group removed, out of the cluster and kills its process (SIGKILL) for
     * good: no fault restarts it, and it takes no further part in the run.
     */
    public void retire(String id) {
        Server member = lockServers.stream().filter(server -> server.hostName.equals(id)).findFirst()
                .orElseThrow(() -> new IllegalArgumentException("no lock peer " + id + " among "
                        + lockHostNames()));
        lockServers.remove(member);
        retired.add(member);
        if (member.process != null) {
            member.process.kill();
        }
    }

    /** Returns the id of the running member whose {@code /healthz} says it leads, or null when none says so. */
    public String leaderId() {
        String name = reportedLockLeader();
        return name == null ? null : name.substring("lock-".length());
    }

    private Server spare(String id) {
        Server spare = spares.get(id);
        if (spare == null) {
            throw new IllegalArgumentException("no spare lock peer " + id + " (spares: " + spares.keySet() + ")");
        }
        return spare;
    }

    /** Sleeps {@code millis} (nothing when not positive); an interrupt ends the sleep and stays set. */
    private static void pause(long millis) {
        if (millis <= 0) {
            return;
        }
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
