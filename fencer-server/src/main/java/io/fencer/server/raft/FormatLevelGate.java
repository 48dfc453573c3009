package io.fencer.server.raft;

import io.fencer.lock.Command;
import io.fencer.lock.LockStateMachine;
import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.ratis.protocol.RaftPeerId;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Raises the group's format level once every peer reads the higher one: while this peer leads and the group's level
 * is below {@link LockStateMachine#FORMAT_LEVEL}, it asks every other peer of the configuration, on the Raft port,
 * which level its release reads ({@link PeerRpc#formatLevelOf}), and when all of them answer this release's level it
 * proposes {@link Command.SetFormatLevel}. A peer that does not answer (down, partitioned) holds the level where it
 * is, as one of the previous release does: raising it then would leave that peer unable to read the log when it
 * comes back. This is etcd's cluster version, decided by the leader from what its members say they run.
 *
 * <p>Why ask rather than let peers announce: a peer of the previous release cannot announce anything, and its
 * refusal of a call it does not know is the one answer it gives that says which release it runs.
 */
public final class FormatLevelGate implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(FormatLevelGate.class);
    /** How often the leader looks, while the group's level is below this release's. */
    public static final long INTERVAL_MILLIS = 1_000;
    static final Duration INTERVAL = Duration.ofMillis(INTERVAL_MILLIS);
    private static final Duration SNAPSHOT_TIMEOUT = Duration.ofSeconds(20);
    /** How long a peer has to answer. */
    static final Duration ANSWER_TIMEOUT = Duration.ofSeconds(2);

    private final RaftNode raft;
    private final RaftLockStateMachine stateMachine;
    private final Proposer proposer;
    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(runnable -> {
        Thread thread = new Thread(runnable, "fencer-format-level");
        thread.setDaemon(true);
        return thread;
    });
    /** The last reason the level stayed, so that it is logged once per change, not every interval. */
    private String lastHeld = "";

    private FormatLevelGate(RaftNode raft, RaftLockStateMachine stateMachine, Proposer proposer) {
        this.raft = raft;
        this.stateMachine = stateMachine;
        this.proposer = proposer;
    }

    /** Starts looking, every {@link #INTERVAL}. */
    public static FormatLevelGate start(RaftNode raft, RaftLockStateMachine stateMachine, Proposer proposer) {
        FormatLevelGate gate = new FormatLevelGate(raft, stateMachine, proposer);
        gate.timer.scheduleWithFixedDelay(gate::look, 0, INTERVAL.toMillis(), TimeUnit.MILLISECONDS);
        stateMachine.addLeadershipHook(gate::wakeUp); // a new leader looks at once, not an interval later
        return gate;
    }

    /**
     * Takes a snapshot when this peer leads a group of one and its latest snapshot holds no store: one written by a
     * release before a group of one's snapshots held its (empty) replicated store. Ratis sends a new peer the
     * leader's latest snapshot, and a new peer refuses one without the store; the new snapshot holds it
     * ({@link StoreInSnapshots#alone}), so a group of one upgraded from that release can grow at once.
     */
    private void renewSnapshotWithoutTheStore() {
        if (!stateMachine.latestSnapshotLacksTheStore() || !raft.isLeaderReady() || raft.configurationSize() != 1) {
            return;
        }
        try {
            long index = raft.takeSnapshot(SNAPSHOT_TIMEOUT); // none while nothing was applied since: next look
            if (!stateMachine.latestSnapshotLacksTheStore()) {
                LOG.info("snapshot {} taken: the one before held no replicated store, which a peer added to this"
                        + " group would refuse", index);
            }
        } catch (IOException e) {
            LOG.debug("no snapshot taken this time; the next look tries again", e); // a full disk says so elsewhere
        }
    }

    /** Looks now, on the gate's own thread (the caller is Ratis's, which must not wait for peers). */
    private void wakeUp() {
        try {
            timer.execute(this::look);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            LOG.debug("closed: no look at the format level", e);
        }
    }

    private void look() {
        try {
            renewSnapshotWithoutTheStore();
            int level = stateMachine.readLocal(LockStateMachine::formatLevel);
            if (level >= LockStateMachine.FORMAT_LEVEL || !raft.isLeaderReady()) {
                return;
            }
            Map<String, String> held = levelsBelow(LockStateMachine.FORMAT_LEVEL);
            if (!held.isEmpty()) {
                String reason = held.toString();
                if (!reason.equals(lastHeld)) {
                    LOG.info("the group stays at format level {}: not every peer reads level {} yet {}", level,
                            LockStateMachine.FORMAT_LEVEL, held);
                    lastHeld = reason;
                }
                return;
            }
            proposer.propose(new Command.SetFormatLevel(LockStateMachine.FORMAT_LEVEL)).get(
                    ANSWER_TIMEOUT.toMillis() * 5, TimeUnit.MILLISECONDS);
            LOG.info("the group's format level is now {}: every peer of the configuration reads it; a peer can no"
                    + " longer go back to the previous release", LockStateMachine.FORMAT_LEVEL);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            LOG.debug("the format level was not raised this time", e);
        }
    }

    /** Returns the peers that do not read {@code level}, each with what it said or why it said nothing. */
    private Map<String, String> levelsBelow(int level) throws InterruptedException {
        PeerRpc rpc = raft.peerRpc();
        Map<String, String> held = new TreeMap<>();
        List<RaftPeerId> others = new ArrayList<>();
        for (RaftPeerId peer : raft.configurationPeers()) {
            if (!peer.equals(raft.selfId())) {
                others.add(peer);
            }
        }
        if (rpc == null && !others.isEmpty()) {
            held.put("*", "the Raft port is not Fencer's transport");
            return held;
        }
        List<CompletableFuture<Integer>> answers = new ArrayList<>();
        for (RaftPeerId peer : others) {
            answers.add(rpc.formatLevelOf(peer).orTimeout(ANSWER_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS));
        }
        for (int i = 0; i < others.size(); i++) {
            try {
                int answered = answers.get(i).get();
                if (answered < level) {
                    held.put(others.get(i).toString(), "reads level " + answered);
                }
            } catch (java.util.concurrent.ExecutionException e) {
                held.put(others.get(i).toString(), "did not answer");
            }
        }
        return held;
    }

    @Override
    public void close() {
        timer.shutdownNow();
    }
}
