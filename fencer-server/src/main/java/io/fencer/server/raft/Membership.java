package io.fencer.server.raft;

import io.fencer.core.InvalidArgumentException;
import io.fencer.core.MembershipRefusedException;
import io.fencer.core.NotLeaderException;
import io.fencer.core.UnavailableException;
import io.fencer.server.ServerConfig;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Pattern;
import org.apache.ratis.proto.RaftProtos.RaftPeerRole;
import org.apache.ratis.protocol.ClientId;
import org.apache.ratis.protocol.RaftClientReply;
import org.apache.ratis.protocol.RaftPeer;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.protocol.SetConfigurationRequest;
import org.apache.ratis.protocol.exceptions.RaftException;
import org.apache.ratis.protocol.exceptions.ReconfigurationInProgressException;
import org.apache.ratis.protocol.exceptions.ReconfigurationTimeoutException;
import org.apache.ratis.protocol.exceptions.SetConfigurationException;
import org.apache.ratis.server.RaftConfiguration;
import org.apache.ratis.server.impl.FencerMembership;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The group's membership, read and changed on the leader: the configuration with each peer's progress
 * ({@link #list()}), and the three changes of {@code fencer.v1.Peers} ({@link #add}, {@link #promote},
 * {@link #remove}), each one Ratis {@code setConfiguration} in compare-and-set mode against the configuration it
 * checked, so that two changes racing cannot both win. Learners are Ratis listeners.
 *
 * <p>Every change passes {@link #checkAllowed} first, the one place where the leader decides whether a change may
 * start: one change at a time, the peer there (or not), a live majority of voters before and after.
 */
public final class Membership {
    private static final Logger LOG = LoggerFactory.getLogger(Membership.class);
    /** A host:port address; the host is a name, IPv4 or bracketed IPv6 address. */
    private static final Pattern ADDRESS = Pattern.compile("(\\[[0-9A-Fa-f:.]{2,45}]|[A-Za-z0-9.-]{1,253}):[0-9]{1,5}");
    /**
     * A voter is live when the leader heard from it within this: the longest election timeout, after which a
     * follower that heard nothing would itself stand for election.
     */
    static final Duration LIVE_WITHIN = RaftNode.ELECTION_TIMEOUT_MAX;
    /** A learner is promoted only when its log is at most this many entries behind the leader's commit index. */
    static final long PROMOTE_LAG_ENTRIES_MAX = 1_000;
    /**
     * The longest a change waits to commit: Ratis stages a new peer for at most {@link #STAGING_TIMEOUT} without an
     * answer, and a commit takes a round trip; a change not done by then is reported as possibly applied.
     */
    static final Duration CHANGE_TIMEOUT = Duration.ofSeconds(60);
    /**
     * How long a new peer may go without answering the leader while it is brought up to date, before its add fails
     * ({@code raft.server.staging.timeout}). Ratis's 3 s refused, on a busy machine, a learner whose JVM was still
     * starting or which was installing a snapshot; one that never answers now fails its add after this.
     */
    static final Duration STAGING_TIMEOUT = Duration.ofSeconds(10);
    /**
     * The slowest link a new peer can be brought up to date over: a request of the copy (an appender batch or a
     * snapshot chunk, 4 MiB at most) must arrive within Ratis's request timeout of 3 s, or it is sent again and the
     * peer never answers. Measured: 13 MB of state crossed 24 Mbit/s in about 3.5 s; at 8 Mbit/s the add failed.
     */
    static final int COPY_LINK_MBITS_MIN = 12;

    /** What a change does. */
    public enum Kind { ADD, PROMOTE, REMOVE }

    /**
     * One peer as the leader sees it. Its match index is empty until it has acknowledged an entry to this leader, and
     * how long ago it answered is empty until it has answered this leader at all: a peer down since before the
     * election has neither, and a number there would read as a fact.
     */
    public record PeerStatus(String id, String raftAddress, String clientAddress, boolean voter, boolean leader,
            OptionalLong matchIndex, OptionalLong lastHeardMillis, boolean live) {}

    /** The configuration as the leader sees it. */
    public record Configuration(List<PeerStatus> peers, long commitIndex, long configurationIndex, boolean changing) {
        /** Returns the peer of id {@code id}, or null. */
        public PeerStatus peer(String id) {
            return peers.stream().filter(peer -> peer.id().equals(id)).findFirst().orElse(null);
        }
    }

    private final RaftNode node;
    private final CatchUps catchUps;

    public Membership(RaftNode node) {
        this.node = Objects.requireNonNull(node, "node");
        this.catchUps = new CatchUps(node);
    }

    /**
     * Returns the configuration with each peer's progress as this peer, the leader, knows it.
     *
     * @throws NotLeaderException on any peer but the leader
     */
    public Configuration list() {
        checkLeader();
        return configuration();
    }

    /** Adds {@code id} as a learner; completes once the change is committed. */
    public CompletableFuture<Configuration> add(String id, String raftAddress, String clientAddress) {
        checkId(id);
        checkAddress("raft_address", raftAddress);
        checkAddress("client_address", clientAddress);
        if (raftAddress.equals(clientAddress)) {
            // Its clients would be sent to its Raft port, where no lock service answers.
            throw new MembershipRefusedException(id, "its Raft and client addresses are both " + raftAddress
                    + ": a peer needs one port for each");
        }
        RaftPeer added = RaftPeer.newBuilder().setId(id).setAddress(raftAddress).setClientAddress(clientAddress)
                .setStartupRole(RaftPeerRole.LISTENER).build();
        return change(Kind.ADD, id, conf -> {
            List<RaftPeer> everyPeer = new ArrayList<>(conf.getCurrentPeers(RaftPeerRole.FOLLOWER));
            everyPeer.addAll(conf.getCurrentPeers(RaftPeerRole.LISTENER));
            for (RaftPeer peer : everyPeer) {
                // Either address against either of the peer's: a client address that is a Raft port (or the
                // reverse) would send clients, or peers, where nothing of theirs answers.
                List<String> taken = List.of(peer.getAddress(), String.valueOf(peer.getClientAddress()),
                        node.clientAddress(peer.getId()));
                String clash = taken.contains(raftAddress) ? raftAddress
                        : taken.contains(clientAddress) ? clientAddress : null;
                if (clash != null) {
                    throw new MembershipRefusedException(id, "peer '" + peer.getId() + "' already has the address "
                            + clash);
                }
            }
            List<RaftPeer> learners = new ArrayList<>(conf.getCurrentPeers(RaftPeerRole.LISTENER));
            learners.add(added);
            return new Proposed(new ArrayList<>(conf.getCurrentPeers(RaftPeerRole.FOLLOWER)), learners);
        });
    }

    /** Makes the learner {@code id} a voter; completes once the change is committed. */
    public CompletableFuture<Configuration> promote(String id) {
        checkId(id);
        return change(Kind.PROMOTE, id, conf -> {
            List<RaftPeer> voters = new ArrayList<>(conf.getCurrentPeers(RaftPeerRole.FOLLOWER));
            List<RaftPeer> learners = new ArrayList<>();
            for (RaftPeer peer : conf.getCurrentPeers(RaftPeerRole.LISTENER)) {
                if (peer.getId().toString().equals(id)) {
                    voters.add(RaftPeer.newBuilder(peer).setStartupRole(RaftPeerRole.FOLLOWER).build());
                } else {
                    learners.add(peer);
                }
            }
            return new Proposed(voters, learners);
        });
    }

    /** Removes the voter or learner {@code id}; completes once the change is committed. */
    public CompletableFuture<Configuration> remove(String id) {
        checkId(id);
        return change(Kind.REMOVE, id, conf -> new Proposed(
                without(conf.getCurrentPeers(RaftPeerRole.FOLLOWER), id),
                without(conf.getCurrentPeers(RaftPeerRole.LISTENER), id)));
    }

    private record Proposed(List<RaftPeer> voters, List<RaftPeer> learners) {}

    private interface Proposal {
        Proposed of(RaftConfiguration current);
    }

    private CompletableFuture<Configuration> change(Kind kind, String id, Proposal proposal) {
        checkLeader();
        RaftConfiguration current = node.division().getRaftConf();
        Configuration seen = configuration();
        checkLevel(id, node.groupFormatLevel());
        checkAllowed(kind, id, seen);
        Proposed proposed = proposal.of(current);
        SetConfigurationRequest.Arguments arguments = SetConfigurationRequest.Arguments.newBuilder()
                .setServersInCurrentConf(new ArrayList<>(current.getCurrentPeers(RaftPeerRole.FOLLOWER)))
                .setListenersInCurrentConf(new ArrayList<>(current.getCurrentPeers(RaftPeerRole.LISTENER)))
                .setServersInNewConf(proposed.voters())
                .setListenersInNewConf(proposed.learners())
                .setMode(SetConfigurationRequest.Mode.COMPARE_AND_SET)
                .build();
        SetConfigurationRequest request = new SetConfigurationRequest(ClientId.randomId(), node.selfId(),
                node.groupId(), 0, arguments);
        LOG.info("peer {} changes the configuration: {} peer '{}'; voters {}, learners {}", node.selfId(), kind, id,
                ids(proposed.voters()), ids(proposed.learners()));
        CompletableFuture<RaftClientReply> reply;
        try {
            reply = node.server().setConfigurationAsync(request);
        } catch (Exception e) {
            reply = CompletableFuture.failedFuture(e);
        }
        return reply.orTimeout(CHANGE_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)
                .handle((answer, error) -> outcome(kind, id, answer, error));
    }

    /**
     * Decides whether the change {@code kind} of peer {@code id} may start on {@code seen}, the configuration as the
     * leader sees it now; throws {@link MembershipRefusedException} naming the peer and why when it may not. The one
     * place where every condition of a membership change is decided.
     */
    public static void checkAllowed(Kind kind, String id, Configuration seen) {
        if (seen.changing()) {
            throw new MembershipRefusedException(id, "another change is in progress (configuration at log index "
                    + seen.configurationIndex() + " not yet in force): try again once `fencer peers list` shows none");
        }
        PeerStatus peer = seen.peer(id);
        switch (kind) {
            case ADD -> {
                if (peer != null) {
                    throw new MembershipRefusedException(id, "the id is already in the group, as a "
                            + (peer.voter() ? "voter" : "learner") + " at " + peer.raftAddress());
                }
            }
            case PROMOTE -> checkPromotable(id, peer, seen);
            case REMOVE -> checkRemovable(id, peer, seen);
        }
    }

    /**
     * Refuses a change while the group is below format level 5: a peer of the previous release may still run, and
     * its Raft port admits only the peers its {@code --peers} named, so a peer added now could not reach it.
     */
    static void checkLevel(String id, int groupFormatLevel) {
        if (groupFormatLevel < io.fencer.lock.LockStateMachine.FORMAT_LEVEL_GENERATIONS) {
            throw new MembershipRefusedException(id, "the group is at format level " + groupFormatLevel + ": a peer"
                    + " may still run the previous release, which cannot take part in a membership change; finish"
                    + " the upgrade first (`fencer status` shows level " + io.fencer.lock.LockStateMachine.FORMAT_LEVEL
                    + " once every peer runs this release)");
        }
    }

    private static void checkPromotable(String id, PeerStatus peer, Configuration seen) {
        if (peer == null) {
            throw new MembershipRefusedException(id, "no such peer in the group: add it first (`fencer peers add`)");
        }
        if (peer.voter()) {
            throw new MembershipRefusedException(id, "the peer is a voter already");
        }
        if (!peer.live()) {
            throw new MembershipRefusedException(id, "the leader has not heard from the learner "
                    + peer.lastHeardMillis().stream().mapToObj(heard -> "for " + heard + " ms").findFirst()
                            .orElse("since it leads") + " (live within " + LIVE_WITHIN.toMillis()
                    + " ms): is it running?");
        }
        long matchIndex = peer.matchIndex().orElse(-1);
        if (matchIndex < seen.configurationIndex()) {
            // Promoted then, Ratis would count it caught up and start its election timer while its own configuration
            // leaves it out: its first missed heartbeat would make it find itself in no configuration and shut down.
            throw new MembershipRefusedException(id, "the learner does not hold the configuration that adds it yet"
                    + " (" + (matchIndex < 0 ? "it has acknowledged no entry to the leader yet"
                            : "its log reaches index " + matchIndex) + ", the configuration is at index "
                    + seen.configurationIndex() + "): wait until it caught up");
        }
        long lag = seen.commitIndex() - matchIndex;
        if (lag > PROMOTE_LAG_ENTRIES_MAX) {
            throw new MembershipRefusedException(id, "the learner is " + lag + " entries behind the leader's commit "
                    + "index, more than " + PROMOTE_LAG_ENTRIES_MAX + ": wait until it caught up");
        }
    }

    private static void checkRemovable(String id, PeerStatus peer, Configuration seen) {
        if (peer == null) {
            throw new MembershipRefusedException(id, "no such peer in the group");
        }
        if (!peer.voter()) {
            return; // a learner counts towards no majority
        }
        List<PeerStatus> voters = seen.peers().stream().filter(PeerStatus::voter).toList();
        if (voters.size() == 1) {
            throw new MembershipRefusedException(id, "it is the last voter: a group needs at least one");
        }
        long liveBefore = voters.stream().filter(PeerStatus::live).count();
        long liveAfter = voters.stream().filter(p -> p.live() && !p.id().equals(id)).count();
        int after = voters.size() - 1;
        // The change commits with a majority of the old voters and of the new ones (joint consensus): both needed.
        if (liveBefore <= voters.size() / 2 || liveAfter <= after / 2) {
            throw new MembershipRefusedException(id, "the " + after + " voters that would remain hold "
                    + liveAfter + " live (heard within " + LIVE_WITHIN.toMillis() + " ms), no majority: "
                    + voters.stream().filter(p -> !p.live()).map(PeerStatus::id).toList() + " not live");
        }
    }

    private Configuration outcome(Kind kind, String id, RaftClientReply reply, Throwable error) {
        Throwable failure = error != null ? io.fencer.server.rpc.ErrorCatalogue.unwrap(error)
                : reply.isSuccess() ? null : reply.getException();
        if (failure == null) {
            FencerMembership.CatchUp catchUp = FencerMembership.markCaughtUp(node.division());
            LOG.info("peer {}: the configuration change {} '{}' is committed{}{}", node.selfId(), kind, id,
                    catchUp.marked() == 0 ? "" : " (" + catchUp.marked() + " new peer(s) marked caught up)",
                    catchUp.pending() == 0 ? "" : " (" + catchUp.pending() + " new peer(s) marked once they hold it)");
            if (catchUp.pending() > 0) {
                catchUps.markWhenReady();
            }
            // A leader that removed itself no longer leads as this runs: it answers the configuration it knows, the
            // peers left, never an empty one that `fencer peers remove` would print as a group without peers.
            return configuration();
        }
        LOG.warn("peer {}: the configuration change {} '{}' failed: {}", node.selfId(), kind, id, failure.toString());
        if (failure instanceof ReconfigurationInProgressException) {
            throw new MembershipRefusedException(id, "another change is in progress: " + failure.getMessage());
        }
        if (failure instanceof ReconfigurationTimeoutException) {
            throw new MembershipRefusedException(id, "the new peer did not answer or catch up within the staging "
                    + "timeout (" + STAGING_TIMEOUT.toSeconds() + " s): start it first (`fencer server --id " + id
                    + " --join ...`), check that its Raft address is reachable, that it has the group's secret, and"
                    + " that the link to it carries " + COPY_LINK_MBITS_MIN + " Mbit/s or more (each request of the"
                    + " copy, up to 4 MiB, must cross it within the 3 s request timeout), then try again");
        }
        if (failure instanceof SetConfigurationException) {
            throw new MembershipRefusedException(id, "the configuration changed meanwhile (another change won): "
                    + "check `fencer peers list` and try again");
        }
        if (failure instanceof org.apache.ratis.protocol.exceptions.NotLeaderException) {
            throw new NotLeaderException(node.leaderClientAddress());
        }
        if (failure instanceof TimeoutException) {
            throw new UnavailableException("the change " + kind + " '" + id + "' did not commit within "
                    + CHANGE_TIMEOUT.toSeconds() + " s: it may or may not take effect; `fencer peers list` tells");
        }
        throw new UnavailableException("the change " + kind + " '" + id + "' failed, it may or may not take effect ("
                + (failure instanceof RaftException ? failure.getMessage() : failure.toString())
                + "); `fencer peers list` tells");
    }

    /**
     * Returns the configuration as this peer sees it, with each peer's progress as Ratis's leader state holds it: a
     * leader that has just removed itself still knows it; on a peer without that state, progress is unknown (every
     * other peer's match index and last answer empty, not live).
     */
    Configuration configuration() {
        RaftConfiguration conf = node.division().getRaftConf();
        Map<RaftPeerId, FencerMembership.Progress> progress = FencerMembership.followers(node.division());
        long commitIndex = node.commitIndex();
        List<PeerStatus> peers = new ArrayList<>();
        for (RaftPeerRole role : List.of(RaftPeerRole.FOLLOWER, RaftPeerRole.LISTENER)) {
            List<RaftPeer> inRole = new ArrayList<>(conf.getCurrentPeers(role));
            inRole.sort(Comparator.comparing(peer -> peer.getId().toString()));
            for (RaftPeer peer : inRole) {
                peers.add(status(peer, role == RaftPeerRole.FOLLOWER, progress.get(peer.getId())));
            }
        }
        boolean changing = FencerMembership.changeInProgress(node.division()) != null;
        return new Configuration(List.copyOf(peers), commitIndex, conf.getLogEntryIndex(), changing);
    }

    private PeerStatus status(RaftPeer peer, boolean voter, FencerMembership.Progress progress) {
        boolean self = peer.getId().equals(node.selfId());
        String clientAddress = node.clientAddress(peer.getId());
        if (self) {
            return new PeerStatus(peer.getId().toString(), peer.getAddress(), clientAddress, voter,
                    node.isLeader(), OptionalLong.of(node.lastLogIndex()), OptionalLong.of(0), true);
        }
        OptionalLong matchIndex = known(progress == null ? FencerMembership.Progress.UNKNOWN : progress.matchIndex());
        OptionalLong heard = known(progress == null ? FencerMembership.Progress.UNKNOWN : progress.lastHeardMillis());
        return new PeerStatus(peer.getId().toString(), peer.getAddress(), clientAddress, voter, false, matchIndex,
                heard, heard.isPresent() && heard.getAsLong() <= LIVE_WITHIN.toMillis());
    }

    private static OptionalLong known(long value) {
        return value == FencerMembership.Progress.UNKNOWN ? OptionalLong.empty() : OptionalLong.of(value);
    }

    private void checkLeader() {
        node.checkLeader();
    }

    private static List<RaftPeer> without(java.util.Collection<RaftPeer> peers, String id) {
        return peers.stream().filter(peer -> !peer.getId().toString().equals(id)).toList();
    }

    private static List<String> ids(List<RaftPeer> peers) {
        return peers.stream().map(peer -> peer.getId().toString()).toList();
    }

    private static boolean validPort(int port) {
        return port >= 1 && port <= 65_535;
    }

    /** Checks a membership call's peer id against the one rule of peer ids, as {@code --id} and --peers are. */
    static void checkId(String id) {
        ServerConfig.Peer.checkId(id);
    }

    private static void checkAddress(String field, String address) {
        if (address == null || !ADDRESS.matcher(address).matches()
                || !validPort(Integer.parseInt(address.substring(address.lastIndexOf(':') + 1)))) {
            throw new InvalidArgumentException(field, String.valueOf(address), field + " must be host:port with a "
                    + "port in [1, 65535]: '" + address + "'");
        }
    }
}
