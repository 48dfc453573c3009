package io.fencer.cli;

import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.PeerStatus;
import io.fencer.core.FencerException;
import io.fencer.server.FencerServer;
import io.fencer.server.ServerConfig;
import io.fencer.server.raft.RaftNode;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;
import picocli.CommandLine.Model.CommandSpec;

/**
 * The steps of {@code fencer server --join}: before the start, ask the group for its peers (a peer of this id at
 * another address, or another peer at this address, is refused at once, changing nothing); after it, wait until the
 * group's leader adds this peer ({@code fencer peers add}) and sends it the log. A peer the group did not add within
 * the wait stops, removes the empty Raft storage it made, and says which command to run, unless the group is copying
 * its state to it then (a large snapshot takes as long as its bytes take): it waits on while the copy goes on,
 * until the group has sent nothing for {@link #COPY_QUIET_MAX}. Ratis needs this order:
 * the leader catches a new peer up before it commits the change that adds it, and gives up on one that does not
 * answer within its staging timeout (10 s), so the peer must run before the add.
 */
final class JoinSteps {
    static final Duration WAIT_MAX = Duration.ofHours(24);
    private static final Duration POLL = Duration.ofMillis(200);
    private static final Duration CALL_TIMEOUT = Duration.ofSeconds(10);
    /**
     * How long a peer that ran out of its wait goes on hearing nothing from the group before it gives up: a leader
     * catching it up sends a request at least every few seconds (a 4 MiB one takes at most the 3 s request timeout to
     * cross), and gives up on a peer that has not answered for its staging timeout, 10 s.
     */
    static final Duration COPY_QUIET_MAX = Duration.ofSeconds(10);

    private final CommandSpec spec;
    private final List<String> group;
    private final ServerConfig config;
    private final ServerTlsOptions tls;
    private final String raftAddress;
    private final String clientAddress;
    private final boolean restart;

    JoinSteps(CommandSpec spec, List<String> group, ServerConfig config, ServerTlsOptions tls) {
        this.spec = spec;
        this.group = List.copyOf(group);
        this.config = config;
        this.tls = tls;
        this.raftAddress = config.host() + ":" + config.raftPort();
        this.clientAddress = config.host() + ":" + config.port();
        this.restart = RaftNode.hasGroupStorage(config.dataDir());
    }

    /** Returns the command an operator runs against the group to add this peer. */
    String addCommand() {
        return "fencer peers add " + config.id() + " --raft " + raftAddress + " --client " + clientAddress
                + " --server " + String.join(",", group);
    }

    /**
     * Checks the group before the start; returns false, having said why, when the group has another peer of this
     * id or address. A restart (Raft storage present) skips the check: the durable configuration is in force.
     *
     * @throws FencerException when the group cannot be asked (unreachable, no leader, refused)
     */
    boolean check() {
        if (restart) {
            return true;
        }
        List<PeerStatus> peers;
        try (FencerClient client = client()) {
            peers = client.peers().list();
        }
        for (PeerStatus peer : peers) {
            boolean sameId = peer.id().equals(config.id());
            boolean sameAddress = peer.raftAddress().equals(raftAddress) || peer.clientAddress().equals(clientAddress);
            if (sameId != sameAddress || (sameId && !peer.raftAddress().equals(raftAddress))) {
                refuse("the group already has peer '" + peer.id() + "' at Raft " + peer.raftAddress() + ", client "
                        + peer.clientAddress() + "; this peer is '" + config.id() + "' at Raft " + raftAddress
                        + ", client " + clientAddress + ": remove that peer first ('fencer peers remove " + peer.id()
                        + "'), or start this one with another --id or ports");
                return false;
            }
        }
        return true;
    }

    /** What the wait watches of the server it started: {@link FencerServer}'s answers (a test's own in tests). */
    interface Joiner {
        /** Why the server is not in its group's configuration, or null once it is. */
        String notInGroup();

        /** How long ago another peer last sent the server anything on its Raft port, or null when none has. */
        Duration sincePeerTraffic();

        /** Stops the server. */
        void close();

        static Joiner of(FencerServer server) {
            return new Joiner() {
                @Override
                public String notInGroup() {
                    return server.notInGroup();
                }

                @Override
                public Duration sincePeerTraffic() {
                    return server.sincePeerTraffic();
                }

                @Override
                public void close() {
                    server.close();
                }
            };
        }
    }

    /**
     * Waits until the group has added {@code server}; returns false, having closed it, removed the Raft storage
     * this start made and said which command to run, when it was not added within {@code wait} and the group is not
     * copying its state to it ({@link #copying}).
     */
    boolean awaitAdded(Joiner server, Duration wait) throws InterruptedException, IOException {
        PrintWriter err = spec.commandLine().getErr();
        if (server.notInGroup() != null) {
            err.println("fencer: peer " + config.id() + " waits to be added to the group, at most "
                    + Durations.format(wait) + ": run " + addCommand());
            err.flush();
        }
        long deadline = System.nanoTime() + wait.toNanos();
        boolean saidCopying = false;
        while (server.notInGroup() != null) {
            if (System.nanoTime() - deadline > 0) {
                Duration sincePeerTraffic = server.sincePeerTraffic();
                if (!copying(sincePeerTraffic)) {
                    server.close();
                    if (!restart) {
                        deleteRaftStorage();
                    }
                    refuse("the group did not add peer " + config.id() + " within " + Durations.format(wait)
                            + " (--join-wait)" + (sincePeerTraffic == null ? "" : ", and sent it nothing for the last "
                            + Durations.format(COPY_QUIET_MAX)) + ": run " + addCommand() + " while this peer waits,"
                            + " then promote it ('fencer peers promote " + config.id() + "')");
                    return false;
                }
                if (!saidCopying) {
                    err.println("fencer: peer " + config.id() + ": --join-wait " + Durations.format(wait) + " ran out"
                            + " while the group copies its state to this peer; it waits on while the copy goes on");
                    err.flush();
                    saidCopying = true;
                }
            }
            Thread.sleep(POLL.toMillis());
        }
        err.println("fencer: peer " + config.id() + " is in the group's configuration");
        err.flush();
        return true;
    }

    /**
     * Whether the group is still bringing this peer in, given how long ago another peer last sent it anything: the
     * leader of a group that added it sends its snapshot and log, and heartbeats, until the change commits; one that
     * gave up on it sends nothing more. So a wait that ran out during a long copy goes on, and one the group never
     * answered (or abandoned) does not.
     */
    static boolean copying(Duration sincePeerTraffic) {
        return sincePeerTraffic != null && sincePeerTraffic.compareTo(COPY_QUIET_MAX) < 0;
    }

    private void refuse(String why) {
        PrintWriter err = spec.commandLine().getErr();
        err.println("fencer: --join refused: " + why);
        err.flush();
    }

    /** Removes the Raft storage of a first start that was never added: nothing of the group is in it. */
    private void deleteRaftStorage() throws IOException {
        Path raft = config.dataDir().resolve("raft");
        if (!Files.isDirectory(raft)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(raft)) {
            for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(path);
            }
        }
    }

    private FencerClient client() {
        FencerClient.Builder builder = Fencer.newBuilder().endpoints(group.toArray(String[]::new))
                .callTimeout(CALL_TIMEOUT);
        if (config.tls() != null && tls.caFile != null) {
            // The group's client port trusts certificates of its CA: this peer presents its own.
            builder.tls(tls.caFile, tls.certificateFile, tls.keyFile);
        }
        return builder.build();
    }
}
