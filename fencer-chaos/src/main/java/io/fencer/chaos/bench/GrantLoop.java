package io.fencer.chaos.bench;

import io.fencer.client.FencedLock;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.Session;
import io.fencer.core.SessionExpiredException;
import io.fencer.core.SessionUnauthenticatedException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The failover bench's load: one thread, one session, one lock, acquire → release as fast as the group answers,
 * each grant and each failed call recorded at its {@link System#nanoTime()}. A lost session is counted and replaced
 * by a new one, so the loop goes on.
 */
final class GrantLoop implements AutoCloseable {
    /** How long one acquire waits in line (the lock is only ever this loop's, so it never really waits). */
    static final Duration ACQUIRE_WAIT = Duration.ofSeconds(30);
    /** The pause after a failed call, so that a group without a leader is not asked thousands of times a second. */
    private static final long FAILURE_BACKOFF_MILLIS = 5;

    private final FencerClient client;
    private final Duration ttl;
    private final String lockName;
    private final Thread thread;
    private final List<FailoverPause.Event> events = new ArrayList<>();
    private final AtomicInteger sessionsLost = new AtomicInteger();
    private volatile boolean running = true;
    private volatile String lastFailure;
    /** The first grant after the last failure (or after the start), and the last grant; 0 before either. */
    private long streakStartNanos;
    private long lastGrantNanos;

    private GrantLoop(FencerClient client, Duration ttl, String lockName) {
        this.client = client;
        this.ttl = ttl;
        this.lockName = lockName;
        this.thread = new Thread(this::loop, "failover-grant-loop");
        this.thread.setDaemon(true);
    }

    /** Starts the loop on lock {@code lockName} through sessions of {@code ttl} opened by {@code client}. */
    static GrantLoop start(FencerClient client, Duration ttl, String lockName) {
        GrantLoop loop = new GrantLoop(client, ttl, lockName);
        loop.thread.start();
        return loop;
    }

    private void loop() {
        Session session = null;
        while (running) {
            try {
                if (session == null) {
                    session = client.openSession(ttl);
                }
                cycle(session);
            } catch (SessionExpiredException | SessionUnauthenticatedException e) {
                session = sessionLost(session, e);
            } catch (RuntimeException e) {
                failed(e);
                if (session != null && !session.isAlive()) {
                    session = sessionLost(session, e);
                }
            }
        }
        Thread.interrupted(); // the interrupt of close() ended the last call; the session's close must still go out
        if (session != null) {
            closeQuietly(session);
        }
    }

    private void cycle(Session session) {
        FencedLock lock = session.lock(lockName);
        Grant grant = lock.acquire(ACQUIRE_WAIT);
        granted(System.nanoTime());
        session.release(grant.token());
    }

    private Session sessionLost(Session session, RuntimeException cause) {
        failed(cause);
        if (session != null) {
            sessionsLost.incrementAndGet();
            closeQuietly(session);
        }
        return null;
    }

    private synchronized void granted(long atNanos) {
        events.add(FailoverPause.Event.grant(atNanos));
        if (streakStartNanos == 0 || lastGrantNanos == 0) {
            streakStartNanos = atNanos;
        }
        lastGrantNanos = atNanos;
    }

    private void failed(RuntimeException e) {
        if (!running) {
            return;
        }
        synchronized (this) {
            events.add(FailoverPause.Event.failure(System.nanoTime()));
            streakStartNanos = 0;
            lastGrantNanos = 0;
        }
        lastFailure = e.getClass().getSimpleName() + ": " + e.getMessage();
        FailoverBench.pause(FAILURE_BACKOFF_MILLIS);
    }

    /** Returns whether grants have come without a failed call between them for at least {@code span}. */
    synchronized boolean grantingFor(Duration span) {
        return lastGrantNanos != 0 && lastGrantNanos - streakStartNanos >= span.toNanos();
    }

    /** Returns the events from {@code fromNanos} on, in the order they happened. */
    synchronized List<FailoverPause.Event> eventsSince(long fromNanos) {
        List<FailoverPause.Event> since = new ArrayList<>();
        for (FailoverPause.Event event : events) {
            if (event.atNanos() - fromNanos >= 0) {
                since.add(event);
            }
        }
        return since;
    }

    /** Forgets the events before {@code beforeNanos} (a round is done with them). */
    synchronized void forgetBefore(long beforeNanos) {
        events.removeIf(event -> event.atNanos() - beforeNanos < 0);
    }

    /** Returns the answer time of the first grant after {@code afterNanos}, or null when none came yet. */
    synchronized Long firstGrantAfter(long afterNanos) {
        for (FailoverPause.Event event : events) {
            if (event.granted() && event.atNanos() - afterNanos > 0) {
                return event.atNanos();
            }
        }
        return null;
    }

    /** Returns how many sessions were lost so far. */
    int sessionsLost() {
        return sessionsLost.get();
    }

    /** Returns the last failed call's exception, for a report that something went wrong; null when none failed. */
    String lastFailure() {
        return lastFailure;
    }

    private static void closeQuietly(Session session) {
        try {
            session.close();
        } catch (RuntimeException ignored) {
            // the group may be gone already: the session ends with its ttl
        }
    }

    /** Stops the loop and waits for its thread (an acquire in flight ends within the client's call timeout). */
    @Override
    public void close() {
        running = false;
        thread.interrupt();
        try {
            thread.join(Duration.ofSeconds(45).toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
