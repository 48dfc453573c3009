package io.fencer.server.raft;

import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.ratis.server.impl.FencerMembership;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Marks the peers a committed change added as caught up once each holds the entry of the configuration that adds it
 * ({@link FencerMembership#markCaughtUp} says why not sooner): the leader looks every {@link #POLL} while some wait,
 * on a thread that exists only then. It stops once none waits, or once this peer no longer leads (a new leader marks
 * every peer caught up when it starts); the next committed change looks again.
 */
final class CatchUps {
    private static final Logger LOG = LoggerFactory.getLogger(CatchUps.class);
    static final Duration POLL = Duration.ofMillis(100);

    private final RaftNode node;
    private final Object lock = new Object();
    /** Null while no peer waits. Guarded by {@link #lock}. */
    private ScheduledExecutorService timer;

    CatchUps(RaftNode node) {
        this.node = node;
    }

    /** Looks every {@link #POLL} until no peer waits; a call while it already looks changes nothing. */
    void markWhenReady() {
        synchronized (lock) {
            if (timer != null) {
                return;
            }
            timer = Executors.newSingleThreadScheduledExecutor(runnable -> {
                Thread thread = new Thread(runnable, "fencer-catch-up");
                thread.setDaemon(true);
                return thread;
            });
            timer.scheduleWithFixedDelay(this::look, POLL.toMillis(), POLL.toMillis(), TimeUnit.MILLISECONDS);
        }
    }

    private void look() {
        FencerMembership.CatchUp catchUp;
        try {
            if (!node.isLeader()) {
                stop();
                return;
            }
            catchUp = FencerMembership.markCaughtUp(node.division());
        } catch (RuntimeException e) {
            LOG.debug("peer {}: no look at the new peers' progress (closing?); the next committed change looks again",
                    node.selfId(), e);
            stop();
            return;
        }
        if (catchUp.marked() > 0) {
            LOG.info("peer {}: {} new peer(s) marked caught up: they hold the configuration that adds them",
                    node.selfId(), catchUp.marked());
        }
        if (catchUp.pending() == 0) {
            stop();
        }
    }

    private void stop() {
        synchronized (lock) {
            if (timer != null) {
                timer.shutdown();
                timer = null;
            }
        }
    }
}
