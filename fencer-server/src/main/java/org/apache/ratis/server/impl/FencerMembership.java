package org.apache.ratis.server.impl;

import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.ratis.proto.RaftProtos.RaftPeerRole;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.leader.FollowerInfo;
import org.apache.ratis.server.leader.LogAppender;

/**
 * Fencer's window into what a Ratis 3.3.0 leader knows of a configuration change and of its followers, which Ratis
 * keeps package-private: whether a change is in progress (a new peer staged, a transitional configuration, or a
 * configuration not yet committed; the conditions under which Ratis itself refuses a change) and each follower's
 * match index and last answer. It sits in Ratis's package for that reason alone: a Ratis upgrade that changes these
 * breaks its compilation rather than its meaning.
 */
public final class FencerMembership {
    private FencerMembership() {}

    /**
     * What the leader knows of one follower or listener: its match index, or {@link #UNKNOWN} until it has
     * acknowledged an entry; how long ago it last answered, in milliseconds, or {@link #UNKNOWN} until it has answered
     * this leader at all.
     */
    public record Progress(long matchIndex, long lastHeardMillis) {
        /** What the leader has not learnt yet. */
        public static final long UNKNOWN = -1;
    }

    /**
     * Returns why a change of the configuration could not start now on {@code division}, or null when it could: the
     * same conditions as Ratis's own refusal (a {@code ReconfigurationInProgressException}), checked first so that the
     * refusal can say which. Null also when {@code division} does not lead (the caller answers NOT_LEADER).
     */
    public static String changeInProgress(RaftServer.Division division) {
        if (!(division instanceof RaftServerImpl server)) {
            return null;
        }
        LeaderStateImpl leader = server.getRole().getLeaderState().orElse(null);
        if (leader == null) {
            return null;
        }
        if (leader.inStagingState()) {
            return "the leader is catching up a new peer before it commits the change that adds it";
        }
        if (!server.getRaftConf().isStable()) {
            return "the group is in a transitional configuration (old and new voters) until that change commits";
        }
        if (!server.getState().isConfCommitted()) {
            return "the latest configuration (log index " + server.getRaftConf().getLogEntryIndex()
                    + ") is not committed yet";
        }
        return null;
    }

    /**
     * Returns the progress of every peer {@code division} sends the log to, while it leads (empty otherwise): its
     * match index and how long ago it last answered, in milliseconds.
     */
    public static Map<RaftPeerId, Progress> followers(RaftServer.Division division) {
        Map<RaftPeerId, Progress> progress = new LinkedHashMap<>();
        if (!(division instanceof RaftServerImpl server)) {
            return progress;
        }
        server.getRole().getLeaderState().ifPresent(leader -> leader.getLogAppenders()
                .map(LogAppender::getFollower)
                .forEach(follower -> progress.put(follower.getId(), progressOf(follower))));
        return progress;
    }

    /** What {@link #markCaughtUp} did: the peers it marked, and those it left for a later call. */
    public record CatchUp(int marked, int pending) {}

    /**
     * Marks every follower and listener of the committed configuration that the leader still counts as bootstrapping
     * as caught up once it holds that configuration's entry (its match index has reached it), and returns how many
     * it marked and how many wait for that entry; nothing while a new peer is staged.
     *
     * <p>Why mark: Ratis 3.3.0 marks the peers it staged as caught up when their change commits only when they are
     * voters ({@code containsInConf(id)} looks at voters alone), so a learner added by {@code setConfiguration} stays
     * "bootstrapping" for the rest of the leader's term: every AppendEntries tells it that it is initializing, its
     * division stays STARTING, and once promoted it can neither vote (a vote needs RUNNING) nor stand for election.
     * A group that then lost another voter could elect no leader. A new leader marks every peer caught up when it
     * starts; this does the same for the peers its changes added.
     *
     * <p>Why wait for the entry: the change commits once the new peer is within Ratis's catch-up gap (1,000 entries)
     * of the leader, which with large entries is many megabytes before it receives the entry that names it. Marked
     * then, it turns RUNNING and starts an election timer while its configuration still leaves it out; any pause of
     * the leader's appends longer than an election timeout (one large append over a slow link) makes it stand for
     * election, find itself in no configuration, and shut its division down for good.
     */
    public static CatchUp markCaughtUp(RaftServer.Division division) {
        if (!(division instanceof RaftServerImpl server)) {
            return new CatchUp(0, 0);
        }
        LeaderStateImpl leader = server.getRole().getLeaderState().orElse(null);
        if (leader == null || leader.inStagingState()) {
            return new CatchUp(0, 0);
        }
        RaftConfigurationImpl conf = server.getRaftConf();
        int marked = 0;
        int pending = 0;
        for (LogAppender appender : leader.getLogAppenders().toList()) {
            if (appender.getFollower() instanceof FollowerInfoImpl follower && !follower.isCaughtUp()
                    && conf.containsInConf(follower.getId(), RaftPeerRole.FOLLOWER, RaftPeerRole.LISTENER)) {
                if (follower.getMatchIndex() < conf.getLogEntryIndex()) {
                    pending++;
                    continue;
                }
                follower.catchUp();
                marked++;
            }
        }
        return new CatchUp(marked, pending);
    }

    private static Progress progressOf(FollowerInfo follower) {
        // Ratis starts a follower's match index at -1, and its last answer and the send time of its last answered
        // append at one instant: when the leader began sending to it, less an election timeout (so that it does not
        // count as live). An answer moves the first to its arrival and the second to its request's sending, which
        // differ. While they are still that one instant, the elapsed time measures nothing the follower did.
        boolean answered = follower.getLastRpcResponseTime()
                .compareTo(follower.getLastRespondedAppendEntriesSendTime()) != 0;
        long matchIndex = follower.getMatchIndex();
        return new Progress(matchIndex < 0 ? Progress.UNKNOWN : matchIndex,
                answered ? follower.getLastRpcResponseTime().elapsedTimeMs() : Progress.UNKNOWN);
    }
}
