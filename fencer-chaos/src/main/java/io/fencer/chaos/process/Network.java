package io.fencer.chaos.process;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The network of a chaos run with network faults: one Linux network namespace per process host (each lock peer,
 * the store, each worker), each joined by a veth pair to one bridge in the root namespace, on a private /24
 * ({@code 10.77.K.0/24}). The bridge has the subnet's first address, so the harness reaches every host's admin
 * port for its health checks. Partitions are blackhole routes inside the hosts' namespaces; flaky links are
 * {@code tc netem} on a host's own end of its veth pair.
 *
 * <p>Every name carries the run's tag, {@code <pid>x<run>} in base 36, so a later run can tell an earlier run's
 * leftovers from a live run's: {@link #sweepLeftovers} removes the namespaces (killing what still runs in them:
 * a crashed harness's servers) and links of tags whose harness process is gone. The network is removed on
 * {@link #close}, and by a shutdown hook when the harness exits without closing it (SIGTERM, SIGINT); after a
 * SIGKILL the next run's sweep removes it.
 *
 * <p>Needs root and the {@code ip} and {@code tc} commands; {@link #requireAvailable} says what is missing.
 */
public final class Network implements AutoCloseable {
    /** Where each live network records its names, one file per tag, so a sweep knows what a run made. */
    static final Path STATE_DIRECTORY = Path.of("/run/fencer-chaos");
    /** Every namespace a run makes starts with this. */
    static final String NAMESPACE_PREFIX = "fc-";
    private static final Pattern NAMESPACE_NAME = Pattern.compile("fc-([0-9a-z]+)x([0-9a-z]+)-[a-z0-9-]+");
    private static final Pattern LINK_NAME = Pattern.compile("fc[bvp]([0-9a-z]+)x([0-9a-z]+)(h[0-9]+)?");
    private static final Pattern STATE_NAME = Pattern.compile("([0-9a-z]+)x([0-9a-z]+)");
    private static final Duration COMMAND_TIMEOUT = Duration.ofSeconds(30);
    private static final int HOSTS_MAX = 250;
    /** The flaky link's rate and burst where the kernel has no netem. */
    private static final String TBF_RATE = "256kbit";
    private static final String TBF_BURST = "4kb";
    private static final AtomicInteger RUNS = new AtomicInteger();
    private static final Object SUBNET_LOCK = new Object();

    /** One process host: its name in the run ({@code n1}, {@code store}, {@code w3}), namespace and address. */
    record Host(String name, String namespace, String address, String hostLink, String namespaceLink) {
    }

    private final String tag;
    private final String bridge;
    private final String subnetPrefix;
    private final Map<String, Host> hosts = new LinkedHashMap<>();
    /** The blackhole routes in place: namespace → destination addresses. */
    private final Map<String, Set<String>> blackholes = new LinkedHashMap<>();
    private final Set<String> flakyHosts = new HashSet<>();
    private final Thread shutdownHook;
    private boolean closed;

    private Network(String tag, String subnetPrefix) {
        this.tag = tag;
        this.bridge = "fcb" + tag;
        this.subnetPrefix = subnetPrefix;
        this.shutdownHook = new Thread(this::remove, "network-cleanup-" + tag);
    }

    /**
     * Checks that this process may build a network: it runs as root and finds {@code ip} and {@code tc}.
     *
     * @throws IllegalStateException naming what is missing
     */
    public static void requireAvailable() {
        requireAvailable(effectiveUserId(), searchDirectories(System.getenv("PATH")));
    }

    /** Checks that user {@code userId} finds {@code ip} and {@code tc} in {@code directories} (for tests). */
    static void requireAvailable(long userId, List<Path> directories) {
        List<String> missing = new ArrayList<>();
        if (userId != 0) {
            missing.add("root (this process runs as uid " + userId + "; network namespaces, veth and tc need"
                    + " CAP_NET_ADMIN: run as root or with sudo)");
        }
        for (String command : List.of("ip", "tc")) {
            if (findIn(command, directories) == null) {
                missing.add("the '" + command + "' command (iproute2) in " + directories);
            }
        }
        if (!missing.isEmpty()) {
            throw new IllegalStateException("network faults (partition, flaky) need " + String.join(" and ", missing));
        }
    }

    /** Returns the directories of {@code path}, then sbin: a service's PATH may lack it, where ip and tc live. */
    static List<Path> searchDirectories(String path) {
        List<Path> directories = new ArrayList<>();
        for (String directory : (path == null ? "" : path).split(":")) {
            if (!directory.isEmpty()) {
                directories.add(Path.of(directory));
            }
        }
        directories.addAll(List.of(Path.of("/usr/sbin"), Path.of("/sbin")));
        return directories;
    }

    private static Path findIn(String command, List<Path> directories) {
        for (Path directory : directories) {
            if (Files.isExecutable(directory.resolve(command))) {
                return directory.resolve(command);
            }
        }
        return null;
    }

    /** Returns the absolute path of {@code command} when it is found on PATH or in sbin, else the name itself. */
    private static String binary(String command) {
        Path found = findIn(command, searchDirectories(System.getenv("PATH")));
        return found == null ? command : found.toString();
    }

    /** Returns this process's effective user id, from {@code /proc/self/status}; -1 when it cannot be read. */
    static long effectiveUserId() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("Uid:")) {
                    return Long.parseLong(line.substring(4).strip().split("\\s+")[1]);
                }
            }
        } catch (IOException | RuntimeException e) {
            // not Linux, or no /proc: not root as far as we can tell
        }
        return -1;
    }

    /**
     * Builds a network with one host per name of {@code hostNames}, after sweeping earlier runs' leftovers.
     *
     * @throws IllegalStateException when the network cannot be built (what is missing, or the failed command)
     */
    public static Network create(List<String> hostNames) {
        requireAvailable();
        if (hostNames.size() > HOSTS_MAX) {
            throw new IllegalArgumentException(hostNames.size() + " hosts, more than the " + HOSTS_MAX + " a /24 has");
        }
        sweepLeftovers();
        String tag = Long.toString(ProcessHandle.current().pid(), 36) + "x"
                + Integer.toString(RUNS.incrementAndGet(), 36);
        Network network;
        // Two runs at once (a fenced run beside its control, or two harnesses) must not pick the same subnet: the
        // pick and the bridge that takes the subnet's first address are one step under a lock of this JVM and a
        // file lock of the machine.
        synchronized (SUBNET_LOCK) {
            try (FileChannel lockFile = FileChannel.open(lockPath(), StandardOpenOption.CREATE,
                    StandardOpenOption.WRITE); FileLock held = lockFile.lock()) {
                network = new Network(tag, freeSubnetPrefix());
                Runtime.getRuntime().addShutdownHook(network.shutdownHook);
                network.buildBridge();
            } catch (IOException e) {
                throw new UncheckedIOException("cannot lock " + STATE_DIRECTORY + " to pick a subnet", e);
            }
        }
        try {
            network.buildHosts(hostNames);
        } catch (RuntimeException e) {
            network.close();
            throw e;
        }
        return network;
    }

    private static Path lockPath() throws IOException {
        Files.createDirectories(STATE_DIRECTORY);
        return STATE_DIRECTORY.resolve(".subnet-lock");
    }

    private void buildBridge() {
        try {
            writeState();
            run("ip", "link", "add", bridge, "type", "bridge");
            run("ip", "addr", "add", subnetPrefix + "1/24", "dev", bridge);
            run("ip", "link", "set", bridge, "up");
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    private void buildHosts(List<String> hostNames) {
        int number = 0;
        for (String name : hostNames) {
            number++;
            Host host = new Host(name, NAMESPACE_PREFIX + tag + "-" + name, subnetPrefix + (number + 1),
                    "fcv" + tag + "h" + number, "fcp" + tag + "h" + number);
            hosts.put(name, host);
            run("ip", "netns", "add", host.namespace());
            run("ip", "link", "add", host.hostLink(), "type", "veth", "peer", "name", host.namespaceLink());
            run("ip", "link", "set", host.namespaceLink(), "netns", host.namespace());
            run("ip", "link", "set", host.hostLink(), "master", bridge);
            run("ip", "link", "set", host.hostLink(), "up");
            run("ip", "-n", host.namespace(), "addr", "add", host.address() + "/24", "dev", host.namespaceLink());
            run("ip", "-n", host.namespace(), "link", "set", host.namespaceLink(), "up");
            run("ip", "-n", host.namespace(), "link", "set", "lo", "up");
        }
    }

    /** Returns the host named {@code name}. */
    Host host(String name) {
        Host host = hosts.get(name);
        if (host == null) {
            throw new IllegalArgumentException("no host " + name + " in the network (" + hosts.keySet() + ")");
        }
        return host;
    }

    /** Returns the namespace names of this network's hosts. */
    public List<String> namespaces() {
        return hosts.values().stream().map(Host::namespace).toList();
    }

    /** Returns the bridge's name. */
    String bridge() {
        return bridge;
    }

    /** Returns {@code launcher} wrapped to start its processes on {@code hostName}'s namespace. */
    public Launcher launcherOn(String hostName, Launcher launcher) {
        List<String> prefix = new ArrayList<>(commandPrefixOn(hostName));
        prefix.addAll(launcher.commandPrefix());
        return new Launcher(prefix);
    }

    /** Returns what runs a command on {@code hostName}'s namespace when put before it: {@code ip netns exec NS}. */
    public List<String> commandPrefixOn(String hostName) {
        return List.of(binary("ip"), "netns", "exec", host(hostName).namespace());
    }

    /**
     * Cuts {@code first} from {@code second} both ways: each drops what it sends to the other (a blackhole route
     * in its namespace), so neither can open or keep a connection to the other. Idempotent.
     */
    public synchronized void cut(String first, String second) {
        blackhole(host(first), host(second));
        blackhole(host(second), host(first));
    }

    private void blackhole(Host from, Host to) {
        if (blackholes.computeIfAbsent(from.namespace(), key -> new HashSet<>()).add(to.address())) {
            run("ip", "-n", from.namespace(), "route", "add", "blackhole", to.address() + "/32");
        }
    }

    /** Removes every cut. */
    public synchronized void heal() {
        for (Map.Entry<String, Set<String>> entry : blackholes.entrySet()) {
            for (String address : entry.getValue()) {
                run("ip", "-n", entry.getKey(), "route", "del", "blackhole", address + "/32");
            }
        }
        blackholes.clear();
    }

    /** Returns how many one-way cuts are in place. */
    synchronized int cutCount() {
        return blackholes.values().stream().mapToInt(Set::size).sum();
    }

    /**
     * Makes what {@code hostName} sends late by {@code delay} ± {@code jitter}, and lost {@code lossPercent}%, with
     * {@code tc netem}; where the kernel has no netem (some VM kernels), throttles it instead with a token bucket
     * ({@code tbf}: a small rate and queue, so packets wait and the excess is dropped). Returns what was applied.
     */
    public synchronized String flaky(String hostName, Duration delay, Duration jitter, int lossPercent) {
        Host host = host(hostName);
        List<String> qdisc = new ArrayList<>(List.of("ip", "netns", "exec", host.namespace(), "tc", "qdisc",
                "replace", "dev", host.namespaceLink(), "root"));
        Result netem = execute(concat(qdisc, "netem", "delay", delay.toMillis() + "ms", jitter.toMillis() + "ms",
                "loss", lossPercent + "%"));
        String applied;
        if (netem.status == 0) {
            applied = "netem: delay " + delay.toMillis() + " ms ± " + jitter.toMillis() + " ms, loss " + lossPercent
                    + "%";
        } else if (netem.output.contains("qdisc kind is unknown")) {
            run(concat(qdisc, "tbf", "rate", TBF_RATE, "burst", TBF_BURST, "latency", delay.toMillis() + "ms"));
            applied = "tbf (this kernel has no netem): rate " + TBF_RATE + ", burst " + TBF_BURST + ", queue "
                    + delay.toMillis() + " ms, the excess dropped";
        } else {
            throw new IllegalStateException("'" + String.join(" ", qdisc) + " netem ...' failed with status "
                    + netem.status + ": " + netem.output.strip());
        }
        flakyHosts.add(hostName);
        return applied;
    }

    private static String[] concat(List<String> head, String... tail) {
        List<String> all = new ArrayList<>(head);
        all.addAll(List.of(tail));
        return all.toArray(String[]::new);
    }

    /**
     * Makes what reaches {@code hostName} arrive at most at {@code rate} (a {@code tc} rate, e.g. {@code 24mbit}): a
     * token bucket on the bridge's end of its veth pair, whose queue holds a second of it, so a bulk transfer to the
     * host (a snapshot, a log copied to a new peer) takes as long as its bytes take at that rate, and what it sends is
     * not slowed. Lasts until the network is closed.
     */
    public synchronized void throttleInbound(String hostName, String rate) {
        run("tc", "qdisc", "replace", "dev", host(hostName).hostLink(), "root", "tbf", "rate", rate, "burst", "64kb",
                "latency", "1s");
    }

    /** Returns the address of {@code hostName} on this network's subnet. */
    public String address(String hostName) {
        return host(hostName).address();
    }

    /** Ends {@code hostName}'s flaky link. */
    public synchronized void steady(String hostName) {
        Host host = host(hostName);
        if (flakyHosts.remove(hostName)) {
            run("ip", "netns", "exec", host.namespace(), "tc", "qdisc", "del", "dev", host.namespaceLink(), "root");
        }
    }

    /** Removes the network: the namespaces (with their veth ends), the bridge and the state file. Idempotent. */
    @Override
    public void close() {
        remove();
        try {
            Runtime.getRuntime().removeShutdownHook(shutdownHook);
        } catch (IllegalStateException e) {
            // the JVM is shutting down: the hook runs or ran remove()
        }
    }

    private synchronized void remove() {
        if (closed) {
            return;
        }
        closed = true;
        removeTag(tag, hosts.values().stream().map(Host::namespace).toList());
    }

    /** Removes every namespace and link of {@code tag} that exists, and its state file; tolerates absent ones. */
    private static void removeTag(String tag, List<String> knownNamespaces) {
        Set<String> namespaces = new HashSet<>(knownNamespaces);
        for (String namespace : existingNamespaces()) {
            Matcher matcher = NAMESPACE_NAME.matcher(namespace);
            if (matcher.matches() && (matcher.group(1) + "x" + matcher.group(2)).equals(tag)) {
                namespaces.add(namespace);
            }
        }
        for (String namespace : namespaces) {
            killProcessesIn(namespace);
            runQuietly("ip", "netns", "del", namespace);
        }
        for (String link : existingLinks()) {
            Matcher matcher = LINK_NAME.matcher(link);
            if (matcher.matches() && (matcher.group(1) + "x" + matcher.group(2)).equals(tag)) {
                runQuietly("ip", "link", "del", link);
            }
        }
        try {
            Files.deleteIfExists(STATE_DIRECTORY.resolve(tag));
        } catch (IOException e) {
            // a leftover file only names a tag; the next sweep finds it again
        }
    }

    /**
     * Kills (SIGKILL) every process still running in {@code namespace}: after a harness crash its servers would
     * outlive it, and a namespace lives on while a process is in it.
     */
    private static void killProcessesIn(String namespace) {
        for (String line : execute("ip", "netns", "pids", namespace).output.split("\n")) {
            try {
                ProcessHandle.of(Long.parseLong(line.strip())).ifPresent(process -> {
                    process.destroyForcibly();
                    process.onExit().orTimeout(COMMAND_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)
                            .exceptionally(failure -> process).join();
                });
            } catch (NumberFormatException e) {
                // not a pid: an error message of a namespace gone meanwhile
            }
        }
    }

    /**
     * Removes what earlier runs left behind: namespaces and links whose tag's harness process is no longer alive
     * (it was killed before it could clean up). Live runs' networks, this process's included, are left alone.
     *
     * @return the tags removed
     */
    static List<String> sweepLeftovers() {
        Set<String> deadTags = new TreeSet<>();
        for (String namespace : existingNamespaces()) {
            addIfDead(NAMESPACE_NAME.matcher(namespace), deadTags);
        }
        for (String link : existingLinks()) {
            addIfDead(LINK_NAME.matcher(link), deadTags);
        }
        try (var files = Files.exists(STATE_DIRECTORY) ? Files.list(STATE_DIRECTORY) : Stream.<Path>empty()) {
            files.forEach(file -> addIfDead(STATE_NAME.matcher(file.getFileName().toString()), deadTags));
        } catch (IOException e) {
            // no state directory: the names alone tell the tags
        }
        for (String tag : deadTags) {
            removeTag(tag, List.of());
        }
        return List.copyOf(deadTags);
    }

    private static void addIfDead(Matcher matcher, Set<String> deadTags) {
        if (!matcher.matches()) {
            return;
        }
        long pid;
        try {
            pid = Long.parseLong(matcher.group(1), 36);
        } catch (NumberFormatException e) {
            return;
        }
        if (ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)) {
            return;
        }
        deadTags.add(matcher.group(1) + "x" + matcher.group(2));
    }

    /** Returns the names of every network namespace ({@code ip netns list}). */
    static List<String> existingNamespaces() {
        List<String> names = new ArrayList<>();
        for (String line : output("ip", "netns", "list").split("\n")) {
            if (!line.isBlank()) {
                names.add(line.strip().split("\\s+")[0]);
            }
        }
        return names;
    }

    /** Returns the names of every link of the root namespace ({@code ip -o link show}), without {@code @peer}. */
    static List<String> existingLinks() {
        List<String> names = new ArrayList<>();
        for (String line : output("ip", "-o", "link", "show").split("\n")) {
            String[] fields = line.split(":\\s+", 3);
            if (fields.length >= 2) {
                String name = fields[1].strip();
                int at = name.indexOf('@');
                names.add(at < 0 ? name : name.substring(0, at));
            }
        }
        return names;
    }

    /** Returns {@code 10.77.K.} for the lowest K that no address of the root namespace is in. */
    private static String freeSubnetPrefix() {
        String addresses = output("ip", "-o", "addr", "show");
        for (int k = 1; k < 255; k++) {
            String prefix = "10.77." + k + ".";
            if (!addresses.contains(" " + prefix)) {
                return prefix;
            }
        }
        throw new IllegalStateException("no free 10.77.K.0/24 subnet: 254 are in use");
    }

    private void writeState() {
        try {
            Files.createDirectories(STATE_DIRECTORY);
            Files.writeString(STATE_DIRECTORY.resolve(tag), "pid " + ProcessHandle.current().pid() + "\nbridge "
                    + bridge + "\n", StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the network's state under " + STATE_DIRECTORY, e);
        }
    }

    private static void run(String... command) {
        Result result = execute(command);
        if (result.status != 0) {
            throw new IllegalStateException("'" + String.join(" ", command) + "' failed with status " + result.status
                    + ": " + result.output.strip());
        }
    }

    private static void runQuietly(String... command) {
        execute(command);
    }

    private static String output(String... command) {
        Result result = execute(command);
        if (result.status != 0) {
            throw new IllegalStateException("'" + String.join(" ", command) + "' failed with status " + result.status
                    + ": " + result.output.strip());
        }
        return result.output;
    }

    private record Result(int status, String output) {
    }

    private static Result execute(String... given) {
        String[] command = given.clone();
        command[0] = binary(command[0]);
        try {
            Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
            byte[] output = process.getInputStream().readAllBytes();
            if (!process.waitFor(COMMAND_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
                process.destroyForcibly();
                return new Result(-1, "timed out after " + COMMAND_TIMEOUT);
            }
            return new Result(process.exitValue(), new String(output, StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot run '" + String.join(" ", command) + "'", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while running '" + String.join(" ", command) + "'", e);
        }
    }

    @Override
    public String toString() {
        return String.format(Locale.ROOT, "network %s (%s0/24, %d hosts)", bridge, subnetPrefix, hosts.size());
    }
}
