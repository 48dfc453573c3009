package io.fencer.server;

import io.fencer.core.InvalidArgumentException;
import io.fencer.core.Ticker;
import io.fencer.core.TokenKeys;
import io.fencer.lock.Limits;
import io.fencer.server.net.PortLimits;
import io.fencer.server.tls.TlsFiles;
import io.fencer.server.watch.WatchLimits;
import io.fencer.store.StoreOptions;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * The settings of one Fencer server (one peer of a replication group).
 *
 * @param dataDir where the Raft log, snapshots and metadata live
 * @param id this peer's id in {@code peers} (default "n1")
 * @param host the address to bind (default 127.0.0.1)
 * @param port the gRPC client port (default 7070; 0 = any free port)
 * @param adminPort the admin HTTP port for /healthz and /metrics (default 7071; 0 = any free; -1 = off)
 * @param raftPort the Raft port (default port + 2; 0 = any free, single peer only)
 * @param peers every peer of the group, this one included; empty = a group of this peer alone. With peers, this
 *     peer listens on its entry's port and raftPort (bound on {@code host}, e.g. 0.0.0.0 for every interface)
 *     and the entries' host:port are the addresses peers and clients are told
 * @param lockDelay how long a lock freed by session expiry stays unavailable (ZERO = off, the default); at most
 *     the longest session TTL ({@link Limits#ttlMillisMax()})
 * @param limits the state machine's limits
 * @param ticker the time source for session deadlines and lock-delay
 * @param tokenKeys the keys that sign every sequencer the lock service returns and that the hosted store requires;
 *     null = plain (unsigned) sequencers, and the store accepts them
 * @param store the limits of the fenced store hosted beside the lock service on the same gRPC port, with its data
 *     in {@code dataDir/store} (its keys are replaced by {@code tokenKeys}); null = no store (default: on)
 * @param acl the ACL file every call of the lock service and the hosted store is checked against (see
 *     {@link io.fencer.server.auth.AclFile}); null = every caller may make every call (the default)
 * @param tls the TLS files of every port: the client port serves TLS only, the admin port HTTPS, and peers talk
 *     mutual TLS on the Raft port; with a client CA, clients must present its certificates; null = plaintext
 * @param httpPort the HTTP port serving the unary methods of Locks and Store in the Connect protocol (HTTPS with
 *     {@code tls}); -1 = off (the default here, so that settings on free ports bind no fixed one; the CLI's
 *     default is the port + 3), 0 = any free port
 * @param watch the limits of the Watch service (watchers, events kept); default {@link WatchLimits#DEFAULT}
 * @param replySpin how long an event loop of the client port polls, instead of sleeping, for the answer to a lone
 *     call or for a lone client's next call (see {@link io.fencer.server.rpc.ReplySpin}); ZERO = never, at most
 *     {@link #REPLY_SPIN_MAX}; default {@link #REPLY_SPIN_DEFAULT}
 * @param peerAuth how peers prove to each other on the Raft port that they are the group's; default the secret in
 *     {@code dataDir/raft.secret} ({@link PeerAuth#defaultFor}), made at the first start, which suits a group of one;
 *     every peer of a larger group needs the same secret (or TLS with a CA and {@link PeerAuth#tlsOnly()})
 * @param ports the bounds of the client, admin and HTTP ports against slow clients and connection floods: timeouts
 *     (TLS handshake, request headers and body, idle connections) and connection caps in total and per remote
 *     address; default {@link PortLimits#DEFAULT}, whose values its Javadoc states
 * @param quotas the quotas of each identity (sessions, lock records, waiters), which the leader enforces before it
 *     proposes; an ACL file may set other ones for some identities; default {@link IdentityQuotas#DEFAULT}
 * @param linger the longest a lone command waits for another to share its log entry, when lone commands have lately
 *     found company (see {@code io.fencer.server.raft.Linger}; the window is half the recent entry latency, at most
 *     this); ZERO = never, at most {@link #LINGER_MAX}; default {@link #LINGER_DEFAULT}
 * @param grantsAhead the most grants of one lock a group of one answers before the releases that make them are
 *     durable (early hand-offs, for clients that ask: see locks.proto's {@code AcquireRequest.answer_before_durable});
 *     0 = never, at most {@link #GRANTS_AHEAD_MAX}; default {@link #GRANTS_AHEAD_DEFAULT}
 */
public record ServerConfig(Path dataDir, String id, String host, int port, int adminPort, int raftPort,
        List<Peer> peers, Duration lockDelay, Limits limits, Ticker ticker, TokenKeys tokenKeys,
        StoreOptions store, Path acl, TlsFiles tls, int httpPort, WatchLimits watch, Duration replySpin,
        PeerAuth peerAuth, PortLimits ports, IdentityQuotas quotas, Duration linger, int grantsAhead) {
    /**
     * The default {@code grantsAhead}: one lock with 64 clients on one peer made 4,017-4,362 grants/s with 8 ahead
     * against 2,639-2,939 with 2 and 1,694-1,741 answering once durable (docs/performance.md); a crash loses at most
     * this many grants of a lock, each reported lost to its holder's client.
     */
    public static final int GRANTS_AHEAD_DEFAULT = 8;
    /** The largest {@code grantsAhead}: the floor a new incarnation raises grows with it. */
    public static final int GRANTS_AHEAD_MAX = 64;
    /** The default {@code replySpin}: a little above one fsync'd commit of a group of one peer on a small VM. */
    public static final Duration REPLY_SPIN_DEFAULT = Duration.ofNanos(300_000);
    /** The longest {@code replySpin}: longer waits are not worth a CPU's spin. */
    public static final Duration REPLY_SPIN_MAX = Duration.ofMillis(10);
    /** The default {@code linger}: the longest window of the proposer before it could be set. */
    public static final Duration LINGER_DEFAULT = Duration.ofMillis(1);
    /**
     * The longest {@code linger}: the window is half an entry's latency, and an entry slower than twice this is a
     * disk or network fault that waiting for company cannot help.
     */
    public static final Duration LINGER_MAX = Duration.ofMillis(10);

    public ServerConfig {
        Objects.requireNonNull(dataDir, "dataDir");
        Peer.checkId(id);
        Objects.requireNonNull(host, "host");
        peers = List.copyOf(peers);
        Objects.requireNonNull(lockDelay, "lockDelay");
        Objects.requireNonNull(limits, "limits");
        if (lockDelay.compareTo(Duration.ofMillis(limits.ttlMillisMax())) > 0) {
            // The delay covers a holder that has not yet noticed its session expired, which it does within its TTL:
            // beyond the longest TTL it protects nobody and only keeps the lock from every waiter.
            throw new IllegalArgumentException("lock delay " + lockDelay + " is longer than the longest session ttl "
                    + limits.ttlMillisMax() + " ms");
        }
        Objects.requireNonNull(ticker, "ticker");
        Objects.requireNonNull(watch, "watch");
        Objects.requireNonNull(replySpin, "replySpin");
        Objects.requireNonNull(peerAuth, "peerAuth");
        Objects.requireNonNull(ports, "ports");
        Objects.requireNonNull(quotas, "quotas");
        Objects.requireNonNull(linger, "linger");
        if (replySpin.isNegative() || replySpin.compareTo(REPLY_SPIN_MAX) > 0) {
            throw new IllegalArgumentException("reply spin " + replySpin + " must lie in [0, " + REPLY_SPIN_MAX
                    + "]");
        }
        if (linger.isNegative() || linger.compareTo(LINGER_MAX) > 0) {
            throw new IllegalArgumentException("linger " + linger + " must lie in [0, " + LINGER_MAX + "]");
        }
        if (grantsAhead < 0 || grantsAhead > GRANTS_AHEAD_MAX) {
            throw new IllegalArgumentException("grants ahead " + grantsAhead + " must lie in [0, " + GRANTS_AHEAD_MAX
                    + "]");
        }
    }

    /** Returns settings that answer at most {@link #GRANTS_AHEAD_DEFAULT} grants of a lock early. */
    public ServerConfig(Path dataDir, String id, String host, int port, int adminPort, int raftPort,
            List<Peer> peers, Duration lockDelay, Limits limits, Ticker ticker, TokenKeys tokenKeys,
            StoreOptions store, Path acl, TlsFiles tls, int httpPort, WatchLimits watch, Duration replySpin,
            PeerAuth peerAuth, PortLimits ports, IdentityQuotas quotas, Duration linger) {
        this(dataDir, id, host, port, adminPort, raftPort, peers, lockDelay, limits, ticker, tokenKeys, store, acl,
                tls, httpPort, watch, replySpin, peerAuth, ports, quotas, linger, GRANTS_AHEAD_DEFAULT);
    }

    /** Returns settings that linger at most {@link #LINGER_DEFAULT}. */
    public ServerConfig(Path dataDir, String id, String host, int port, int adminPort, int raftPort,
            List<Peer> peers, Duration lockDelay, Limits limits, Ticker ticker, TokenKeys tokenKeys,
            StoreOptions store, Path acl, TlsFiles tls, int httpPort, WatchLimits watch, Duration replySpin,
            PeerAuth peerAuth, PortLimits ports, IdentityQuotas quotas) {
        this(dataDir, id, host, port, adminPort, raftPort, peers, lockDelay, limits, ticker, tokenKeys, store, acl,
                tls, httpPort, watch, replySpin, peerAuth, ports, quotas, LINGER_DEFAULT);
    }

    /**
     * Returns settings with the default peer authentication ({@link PeerAuth#defaultFor} {@code dataDir}) port
     * limits and quotas.
     */
    public ServerConfig(Path dataDir, String id, String host, int port, int adminPort, int raftPort,
            List<Peer> peers, Duration lockDelay, Limits limits, Ticker ticker, TokenKeys tokenKeys,
            StoreOptions store, Path acl, TlsFiles tls, int httpPort, WatchLimits watch, Duration replySpin) {
        this(dataDir, id, host, port, adminPort, raftPort, peers, lockDelay, limits, ticker, tokenKeys, store, acl,
                tls, httpPort, watch, replySpin, PeerAuth.defaultFor(dataDir), PortLimits.DEFAULT,
                IdentityQuotas.DEFAULT, LINGER_DEFAULT);
    }

    /** Returns settings without an HTTP port and with the default Watch limits. */
    public ServerConfig(Path dataDir, String id, String host, int port, int adminPort, int raftPort,
            List<Peer> peers, Duration lockDelay, Limits limits, Ticker ticker, TokenKeys tokenKeys,
            StoreOptions store, Path acl, TlsFiles tls) {
        this(dataDir, id, host, port, adminPort, raftPort, peers, lockDelay, limits, ticker, tokenKeys, store, acl,
                tls, -1, WatchLimits.DEFAULT, REPLY_SPIN_DEFAULT);
    }

    /** Returns settings without an ACL file, in plaintext. */
    public ServerConfig(Path dataDir, String id, String host, int port, int adminPort, int raftPort,
            List<Peer> peers, Duration lockDelay, Limits limits, Ticker ticker, TokenKeys tokenKeys,
            StoreOptions store) {
        this(dataDir, id, host, port, adminPort, raftPort, peers, lockDelay, limits, ticker, tokenKeys, store, null,
                null);
    }

    /** Returns settings without token keys and with the default store. */
    public ServerConfig(Path dataDir, String id, String host, int port, int adminPort, int raftPort,
            List<Peer> peers, Duration lockDelay, Limits limits, Ticker ticker) {
        this(dataDir, id, host, port, adminPort, raftPort, peers, lockDelay, limits, ticker, null,
                StoreOptions.defaults(), null, null);
    }

    /** Returns the default settings with {@code dataDir}: one peer "n1" on 127.0.0.1:7070. */
    public static ServerConfig defaults(Path dataDir) {
        return new ServerConfig(dataDir, "n1", "127.0.0.1", 7070, 7071, 7072, List.of(), Duration.ZERO,
                Limits.DEFAULT, Ticker.system());
    }

    public ServerConfig withPorts(int port, int adminPort, int raftPort) {
        return new ServerConfig(dataDir, id, host, port, adminPort, raftPort, peers, lockDelay, limits, ticker,
                tokenKeys, store, acl, tls, httpPort, watch, replySpin, peerAuth, ports, quotas, linger, grantsAhead);
    }

    public ServerConfig withPeers(String id, List<Peer> peers) {
        return new ServerConfig(dataDir, id, host, port, adminPort, raftPort, peers, lockDelay, limits, ticker,
                tokenKeys, store, acl, tls, httpPort, watch, replySpin, peerAuth, ports, quotas, linger, grantsAhead);
    }

    public ServerConfig withLockDelay(Duration lockDelay) {
        return new ServerConfig(dataDir, id, host, port, adminPort, raftPort, peers, lockDelay, limits, ticker,
                tokenKeys, store, acl, tls, httpPort, watch, replySpin, peerAuth, ports, quotas, linger, grantsAhead);
    }

    public ServerConfig withLimits(Limits limits) {
        return new ServerConfig(dataDir, id, host, port, adminPort, raftPort, peers, lockDelay, limits, ticker,
                tokenKeys, store, acl, tls, httpPort, watch, replySpin, peerAuth, ports, quotas, linger, grantsAhead);
    }

    public ServerConfig withTicker(Ticker ticker) {
        return new ServerConfig(dataDir, id, host, port, adminPort, raftPort, peers, lockDelay, limits, ticker,
                tokenKeys, store, acl, tls, httpPort, watch, replySpin, peerAuth, ports, quotas, linger, grantsAhead);
    }

    /** Returns these settings signing sequencers with {@code tokenKeys} (null = unsigned). */
    public ServerConfig withTokenKeys(TokenKeys tokenKeys) {
        return new ServerConfig(dataDir, id, host, port, adminPort, raftPort, peers, lockDelay, limits, ticker,
                tokenKeys, store, acl, tls, httpPort, watch, replySpin, peerAuth, ports, quotas, linger, grantsAhead);
    }

    /** Returns these settings hosting the store with {@code store} limits, or no store when null. */
    public ServerConfig withStore(StoreOptions store) {
        return new ServerConfig(dataDir, id, host, port, adminPort, raftPort, peers, lockDelay, limits, ticker,
                tokenKeys, store, acl, tls, httpPort, watch, replySpin, peerAuth, ports, quotas, linger, grantsAhead);
    }

    /** Returns these settings checking every call against the ACL file {@code acl} (null = no checks). */
    public ServerConfig withAcl(Path acl) {
        return new ServerConfig(dataDir, id, host, port, adminPort, raftPort, peers, lockDelay, limits, ticker,
                tokenKeys, store, acl, tls, httpPort, watch, replySpin, peerAuth, ports, quotas, linger, grantsAhead);
    }

    /** Returns these settings serving TLS with {@code tls} on every port, or plaintext when null. */
    public ServerConfig withTls(TlsFiles tls) {
        return new ServerConfig(dataDir, id, host, port, adminPort, raftPort, peers, lockDelay, limits, ticker,
                tokenKeys, store, acl, tls, httpPort, watch, replySpin, peerAuth, ports, quotas, linger, grantsAhead);
    }

    /** Returns these settings serving the HTTP port on {@code httpPort} (-1 = off, 0 = any free port). */
    public ServerConfig withHttpPort(int httpPort) {
        return new ServerConfig(dataDir, id, host, port, adminPort, raftPort, peers, lockDelay, limits, ticker,
                tokenKeys, store, acl, tls, httpPort, watch, replySpin, peerAuth, ports, quotas, linger, grantsAhead);
    }

    /** Returns these settings with {@code watch} as the Watch service's limits. */
    public ServerConfig withWatchLimits(WatchLimits watch) {
        return new ServerConfig(dataDir, id, host, port, adminPort, raftPort, peers, lockDelay, limits, ticker,
                tokenKeys, store, acl, tls, httpPort, watch, replySpin, peerAuth, ports, quotas, linger, grantsAhead);
    }

    /** Returns these settings with {@code replySpin} as the event loops' spin (ZERO = never). */
    public ServerConfig withReplySpin(Duration replySpin) {
        return new ServerConfig(dataDir, id, host, port, adminPort, raftPort, peers, lockDelay, limits, ticker,
                tokenKeys, store, acl, tls, httpPort, watch, replySpin, peerAuth, ports, quotas, linger, grantsAhead);
    }

    /**
     * Returns these settings with {@code linger} as the longest a lone command waits for company (ZERO = never).
     */
    public ServerConfig withLinger(Duration linger) {
        return new ServerConfig(dataDir, id, host, port, adminPort, raftPort, peers, lockDelay, limits, ticker,
                tokenKeys, store, acl, tls, httpPort, watch, replySpin, peerAuth, ports, quotas, linger, grantsAhead);
    }

    /**
     * Returns these settings with {@code grantsAhead} as the most grants of a lock answered before they are durable
     * (0 = never).
     */
    public ServerConfig withGrantsAhead(int grantsAhead) {
        return new ServerConfig(dataDir, id, host, port, adminPort, raftPort, peers, lockDelay, limits, ticker,
                tokenKeys, store, acl, tls, httpPort, watch, replySpin, peerAuth, ports, quotas, linger, grantsAhead);
    }

    /**
     * Returns these settings with {@code peerAuth} as the way peers authenticate each other on the Raft port (every
     * peer of a group of more than one needs the same secret, or TLS with {@link PeerAuth#tlsOnly()}).
     */
    public ServerConfig withPeerAuth(PeerAuth peerAuth) {
        return new ServerConfig(dataDir, id, host, port, adminPort, raftPort, peers, lockDelay, limits, ticker,
                tokenKeys, store, acl, tls, httpPort, watch, replySpin, peerAuth, ports, quotas, linger, grantsAhead);
    }

    /** Returns these settings with {@code ports} as the ports' timeouts and connection caps. */
    public ServerConfig withPortLimits(PortLimits ports) {
        return new ServerConfig(dataDir, id, host, port, adminPort, raftPort, peers, lockDelay, limits, ticker,
                tokenKeys, store, acl, tls, httpPort, watch, replySpin, peerAuth, ports, quotas, linger, grantsAhead);
    }

    /** Returns these settings with {@code quotas} as the quotas of every identity an ACL file sets none for. */
    public ServerConfig withQuotas(IdentityQuotas quotas) {
        return new ServerConfig(dataDir, id, host, port, adminPort, raftPort, peers, lockDelay, limits, ticker,
                tokenKeys, store, acl, tls, httpPort, watch, replySpin, peerAuth, ports, quotas, linger, grantsAhead);
    }

    /**
     * One peer of the group: {@code id=host:port[:raftPort]} on the command line, the Raft port defaulting to
     * port + 2.
     */
    public record Peer(String id, String host, int port, int raftPort) {
        /**
         * The one rule of peer ids, wherever they come from ({@code --id}, {@code --peers}, a membership call): an id
         * ends up in paths, log lines, metric labels and the Raft port's handshake, so it takes only what all of
         * those take unquoted, and is never a path's "." or "..".
         */
        private static final Pattern ID = Pattern.compile("(?!\\.{1,2}$)[A-Za-z0-9._-]{1,64}");
        /** What {@link #checkId} says a peer id is. */
        public static final String ID_RULE = "1 to 64 characters of letters, digits, '-', '_' and '.', other than "
                + "'.' and '..'";

        public Peer {
            checkId(id);
        }

        /**
         * Returns {@code id} when it is a valid peer id.
         *
         * @throws InvalidArgumentException of field {@code id} naming the id (controls escaped) when it is not
         */
        public static String checkId(String id) {
            if (id == null || !ID.matcher(id).matches()) {
                throw new InvalidArgumentException("id", String.valueOf(id), "peer id '"
                        + InvalidArgumentException.printable(String.valueOf(id)) + "' is not " + ID_RULE);
            }
            return id;
        }

        /** Parses {@code id=host:port[:raftPort]}. */
        public static Peer parse(String text) {
            int eq = text.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("peer '" + text + "' is not id=host:port[:raftPort]");
            }
            String[] parts = text.substring(eq + 1).split(":", -1);
            if (parts.length < 2 || parts.length > 3 || parts[0].isEmpty()) {
                throw new IllegalArgumentException("peer '" + text + "' is not id=host:port[:raftPort]");
            }
            try {
                int port = Integer.parseInt(parts[1]);
                int raftPort = parts.length == 3 ? Integer.parseInt(parts[2]) : port + 2;
                return new Peer(text.substring(0, eq), parts[0], port, raftPort);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("peer '" + text + "' has a port that is not a number", e);
            }
        }

        public String clientAddress() {
            return host + ":" + port;
        }

        public String raftAddress() {
            return host + ":" + raftPort;
        }
    }
}
