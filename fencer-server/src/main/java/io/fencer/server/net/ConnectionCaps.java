package io.fencer.server.net;

import io.fencer.core.Ticker;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The connection caps of one listening port: at most {@code connectionsMax} connections open at once, and at most
 * {@code perAddressMax} from one remote address. A connection over either cap is refused as it is accepted (closed
 * before any byte of it is read, before its TLS handshake), so a flood costs the port one accept per attempt, and
 * the connections already open keep working.
 *
 * <p>Refusals are counted as {@code fencer_connections_refused_total{port, cap="per_address"|"total"}} and logged
 * at most once per {@link #LOG_INTERVAL} per remote address, the next line counting those left out
 * ({@link RefusalLog}); open connections are the gauge {@code fencer_connections_open{port}}. Thread-safe: ports
 * accept on one thread and close on many.
 */
public final class ConnectionCaps {
    /** The shortest time between two log lines about the refused connections of one address. */
    static final Duration LOG_INTERVAL = Duration.ofSeconds(10);
    /** The most addresses whose log intervals are remembered. */
    static final int LOGGED_ADDRESSES_MAX = 10_000;
    /** The phases whose timeouts are counted: a client too slow in any of them was closed. */
    static final List<String> TIMEOUT_PHASES = List.of("handshake", "headers", "body", "answer");
    private static final Map<String, String> PHASE_NAMES = Map.of("handshake", "TLS handshake",
            "headers", "request line and headers", "body", "request body", "answer", "reading of the answer");
    private static final Logger LOG = LoggerFactory.getLogger(ConnectionCaps.class);

    private final String port;
    private final String connectionsLimit;
    private final int connectionsMax;
    private final int perAddressMax;
    private final Map<InetAddress, Integer> openByAddress = new HashMap<>(); // guarded by this
    private int open; // guarded by this
    private final Counter refusedPerAddress;
    private final Counter refusedTotal;
    private final RefusalLog log;
    private final Map<String, Counter> timeouts;
    private final RefusalLog timeoutLog;

    /**
     * Returns the caps of the port named {@code port} ("grpc", "admin", "http"), whose limits are named
     * {@code limitPrefix + "ConnectionsMax"} and {@code limitPrefix + "ConnectionsPerAddressMax"} in log lines.
     *
     * @param countsTimeouts whether the port reports its slow clients through {@link #timedOut} (the HTTP ports
     *     do; the gRPC port's handshake and idle timeouts are gRPC's own, which it does not report), and so has the
     *     counters {@code fencer_connections_timed_out_total{port, phase}}
     */
    public ConnectionCaps(String port, String limitPrefix, int connectionsMax, int perAddressMax,
            boolean countsTimeouts, MeterRegistry registry, Ticker ticker) {
        if (connectionsMax < 1 || perAddressMax < 1 || perAddressMax > connectionsMax) {
            throw new IllegalArgumentException("caps of the " + port + " port must be positive, the one per address "
                    + "at most the total: connectionsMax " + connectionsMax + ", perAddressMax " + perAddressMax);
        }
        this.port = port;
        this.connectionsLimit = limitPrefix + "Connections";
        this.connectionsMax = connectionsMax;
        this.perAddressMax = perAddressMax;
        this.refusedPerAddress = refusedCounter(registry, port, "per_address");
        this.refusedTotal = refusedCounter(registry, port, "total");
        Gauge.builder("fencer.connections.open", this, ConnectionCaps::open)
                .description("Connections open on the port").tag("port", port).register(registry);
        this.log = new RefusalLog(ticker, LOG_INTERVAL, LOGGED_ADDRESSES_MAX);
        this.timeoutLog = new RefusalLog(ticker, LOG_INTERVAL, LOGGED_ADDRESSES_MAX);
        Map<String, Counter> counters = new HashMap<>();
        for (String phase : countsTimeouts ? TIMEOUT_PHASES : List.<String>of()) {
            counters.put(phase, Counter.builder("fencer.connections.timed.out")
                    .description("Connections closed because the client was too slow: its TLS handshake, its request "
                            + "headers, its body, or taking its answer took longer than the port allows")
                    .tag("port", port).tag("phase", phase).register(registry));
        }
        this.timeouts = Map.copyOf(counters);
    }

    private static Counter refusedCounter(MeterRegistry registry, String port, String cap) {
        return Counter.builder("fencer.connections.refused")
                .description("Connections closed as they were accepted: over the port's cap in total or per address")
                .tag("port", port).tag("cap", cap).register(registry);
    }

    /** Returns the IP address of a socket address, or null when it has none (a Unix or in-process socket). */
    public static InetAddress addressOf(SocketAddress remote) {
        return remote instanceof InetSocketAddress inet ? inet.getAddress() : null;
    }

    /**
     * Counts a connection just accepted from {@code address} and returns true, or returns false (and counts and
     * maybe logs the refusal) when it would go over a cap; the caller then closes it. A connection without an IP
     * address is counted in the total only.
     */
    public boolean tryOpen(InetAddress address) {
        int fromAddress;
        synchronized (this) {
            fromAddress = address == null ? 0 : openByAddress.getOrDefault(address, 0);
            if (open < connectionsMax && fromAddress < perAddressMax) {
                open++;
                if (address != null) {
                    openByAddress.put(address, fromAddress + 1);
                }
                return true;
            }
        }
        refused(address, fromAddress >= perAddressMax, fromAddress);
        return false;
    }

    /** Forgets a connection {@link #tryOpen} counted, once it is closed. */
    public synchronized void closed(InetAddress address) {
        if (open > 0) {
            open--;
        }
        if (address != null) {
            openByAddress.computeIfPresent(address, (key, count) -> count <= 1 ? null : count - 1);
        }
    }

    private void refused(InetAddress address, boolean perAddress, int fromAddress) {
        (perAddress ? refusedPerAddress : refusedTotal).increment();
        String who = address == null ? "(no address)" : address.getHostAddress();
        long leftOut = log.admit(who);
        if (leftOut < 0) {
            return;
        }
        String why = perAddress
                ? fromAddress + " connections from that address are open, the most allowed ("
                        + connectionsLimit + "PerAddressMax " + perAddressMax + ")"
                : "the port has " + connectionsMax + " connections open, the most allowed (" + connectionsLimit
                        + "Max " + connectionsMax + ")";
        LOG.warn("{} port refused a connection from {}: {}{}", port, who, why,
                leftOut == 0 ? "" : "; " + leftOut + " more refused from that address since the last line");
    }

    /**
     * Counts a connection closed because its client took longer than {@code limitName} ({@code limit}) in
     * {@code phase} (one of {@link #TIMEOUT_PHASES}), and logs it at most once per interval per address.
     */
    public void timedOut(InetSocketAddress remote, String phase, String limitName, Duration limit) {
        Counter counter = timeouts.get(phase);
        if (counter == null) {
            throw new IllegalArgumentException("the " + port + " port counts no timeout of phase '" + phase
                    + "'; it counts " + timeouts.keySet());
        }
        counter.increment();
        InetAddress address = remote == null ? null : remote.getAddress();
        String who = address == null ? "(no address)" : address.getHostAddress();
        long leftOut = timeoutLog.admit(who);
        if (leftOut >= 0) {
            LOG.info("{} port closed a connection from {}: its {} took longer than {} {} ms{}", port, who,
                    PHASE_NAMES.getOrDefault(phase, phase), limitName, limit.toMillis(),
                    leftOut == 0 ? "" : "; " + leftOut + " more closed for slowness since the last line");
        }
    }

    /** Returns the connections open now. */
    public synchronized int open() {
        return open;
    }

    /** Returns the connections open now from {@code address}. */
    public synchronized int open(InetAddress address) {
        return openByAddress.getOrDefault(address, 0);
    }

    public int connectionsMax() {
        return connectionsMax;
    }

    public int perAddressMax() {
        return perAddressMax;
    }
}
