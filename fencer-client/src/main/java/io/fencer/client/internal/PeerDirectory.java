package io.fencer.client.internal;

import static java.util.concurrent.TimeUnit.MILLISECONDS;

import io.fencer.api.v1.ListPeersResponse;
import io.fencer.api.v1.PeerInfo;
import io.fencer.core.FencerException;
import io.fencer.core.InternalException;
import io.fencer.core.PermissionDeniedException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Keeps a client's endpoints in step with the group's membership: it asks whichever peer the client reaches for
 * {@code fencer.v1.Peers/List} when the client starts, every {@link #refreshInterval} after, and soon after a
 * NOT_LEADER answer named a leader the client did not know or a call moved on without a leader named (an election, a
 * peer that left the group); the client then knows every peer's client address ({@link Members#learnPeers}). So a
 * client configured with peers A, B, C still reaches D once the group added D and removed A, B and C, without a
 * restart. The lock client's {@link Router} and the store client's {@link StoreConnection} each have one: a group's
 * peers serve its replicated store at the same addresses.
 *
 * <p>Bounded: one refresh at a time on one daemon thread, at most one per {@link #REFRESH_GAP_MIN}, each within
 * {@link #REFRESH_BUDGET_MAX}. A service that refuses List (the client's identity lacks {@code read} on the
 * whole namespace, a server of an earlier release without the service, or a store server of its own, which has no
 * peers) ends the refreshes: the client keeps its configured endpoints and the leaders NOT_LEADER answers name.
 */
final class PeerDirectory implements AutoCloseable {
    /** A client's way to the group, as a directory keeps it in step. */
    interface Members {
        /**
         * Asks the group for its peers, retrying within {@code budgetNanos}.
         *
         * @throws io.fencer.core.FencerException as the call failed
         */
        ListPeersResponse listPeers(long budgetNanos);

        /**
         * Takes the client addresses of the group's peers as the group lists them: new ones are added, learned ones
         * no longer listed are dropped, and the configured ones stay.
         */
        void learnPeers(List<String> addresses);

        /**
         * Calls {@code listener} whenever an answer names a leader the client did not know, and whenever a call
         * moves on to another endpoint without one named; the listener must return at once.
         */
        void onUnknownLeader(Runnable listener);

        /** Returns the endpoints known now: the configured ones first, then those learned. */
        List<String> endpoints();

        long callTimeoutNanos();
    }

    /** The default time between two refreshes. */
    static final Duration REFRESH_INTERVAL_DEFAULT = Duration.ofSeconds(30);
    /** The JVM system property that sets the time between refreshes in milliseconds (0 = never refresh). */
    static final String REFRESH_INTERVAL_PROPERTY = "fencer.client.peerRefreshMillis";
    static final Duration REFRESH_GAP_MIN = Duration.ofSeconds(1);
    static final Duration REFRESH_BUDGET_MAX = Duration.ofSeconds(5);
    private static final System.Logger LOG = System.getLogger(PeerDirectory.class.getName());

    private final Members members;
    private final Duration refreshInterval;
    private final ScheduledExecutorService timer;
    private final AtomicBoolean scheduled = new AtomicBoolean();
    private final AtomicLong lastRefreshNanos = new AtomicLong(System.nanoTime() - REFRESH_GAP_MIN.toNanos());
    private volatile boolean refused;

    PeerDirectory(Members members, Duration refreshInterval) {
        this.members = members;
        this.refreshInterval = refreshInterval;
        ScheduledThreadPoolExecutor executor = new ScheduledThreadPoolExecutor(1, runnable -> {
            Thread thread = new Thread(runnable, "fencer-peer-directory");
            thread.setDaemon(true);
            return thread;
        });
        executor.setRemoveOnCancelPolicy(true);
        this.timer = executor;
    }

    /**
     * Brings {@code known}, a client's endpoints, in step with the client addresses the group {@code listed}: the
     * learned ones no longer listed go (never one of {@code configured}, never {@code current}, which a call may be
     * using), then the listed ones not known are added, up to {@code max} endpoints in all. Malformed addresses are
     * logged and skipped; a list with none usable changes nothing. The caller holds {@code known}'s lock.
     */
    static void follow(List<String> known, List<String> configured, String current, List<String> listed, int max) {
        List<String> valid = new ArrayList<>();
        for (String address : listed) {
            try {
                valid.add(Router.checkEndpoint(address));
            } catch (IllegalArgumentException e) {
                LOG.log(System.Logger.Level.WARNING, "ignoring a peer address the group listed: {0}", e.getMessage());
            }
        }
        if (valid.isEmpty()) {
            return;
        }
        known.removeIf(endpoint -> !configured.contains(endpoint) && !valid.contains(endpoint)
                && !endpoint.equals(current));
        for (String address : valid) {
            if (!known.contains(address) && known.size() < max) {
                known.add(address);
                LOG.log(System.Logger.Level.DEBUG, "learned peer endpoint {0} from the group''s list", address);
            }
        }
    }

    /** Returns the refresh interval the system property {@value #REFRESH_INTERVAL_PROPERTY} sets, or the default. */
    static Duration refreshIntervalOfProperty() {
        String millis = System.getProperty(REFRESH_INTERVAL_PROPERTY);
        if (millis == null) {
            return REFRESH_INTERVAL_DEFAULT;
        }
        try {
            return Duration.ofMillis(Math.max(0, Long.parseLong(millis.trim())));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(REFRESH_INTERVAL_PROPERTY + " must be a number of milliseconds: '"
                    + millis + "'", e);
        }
    }

    /** Starts refreshing: once now, then every interval (never when the interval is zero). */
    void start() {
        if (refreshInterval.isZero()) {
            return;
        }
        members.onUnknownLeader(this::refreshSoon);
        refreshSoon();
        timer.scheduleWithFixedDelay(this::refreshSoon, refreshInterval.toMillis(), refreshInterval.toMillis(),
                MILLISECONDS);
    }

    /** Asks for a refresh, no sooner than {@link #REFRESH_GAP_MIN} after the last one; one at a time. */
    void refreshSoon() {
        if (refused || timer.isShutdown() || !scheduled.compareAndSet(false, true)) {
            return;
        }
        long waitNanos = Math.max(0, lastRefreshNanos.get() + REFRESH_GAP_MIN.toNanos() - System.nanoTime());
        try {
            timer.schedule(this::refresh, waitNanos, java.util.concurrent.TimeUnit.NANOSECONDS);
        } catch (java.util.concurrent.RejectedExecutionException closed) {
            scheduled.set(false);
        }
    }

    /** Asks the group for its peers and hands their client addresses to the client. */
    void refresh() {
        try {
            lastRefreshNanos.set(System.nanoTime());
            ListPeersResponse peers = members.listPeers(Math.min(members.callTimeoutNanos(),
                    REFRESH_BUDGET_MAX.toNanos()));
            List<String> addresses = new ArrayList<>();
            for (PeerInfo peer : peers.getPeersList()) {
                if (!peer.getClientAddress().isEmpty()) {
                    addresses.add(peer.getClientAddress());
                }
            }
            members.learnPeers(addresses);
        } catch (PermissionDeniedException | InternalException e) {
            refused = true; // no read on the whole namespace, or a server without Peers: keep what is configured
            LOG.log(System.Logger.Level.DEBUG, "the service does not list its peers to this client; the client "
                    + "keeps its configured endpoints: {0}", e.getMessage());
        } catch (FencerException | IllegalStateException e) {
            LOG.log(System.Logger.Level.DEBUG, "listing the peers failed (the next refresh tries again): {0}",
                    e.getMessage());
        } finally {
            scheduled.set(false);
        }
    }

    @Override
    public void close() {
        timer.shutdownNow();
    }
}
