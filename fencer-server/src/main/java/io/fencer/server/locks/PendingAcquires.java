package io.fencer.server.locks;

import io.fencer.core.FencerException;
import io.fencer.core.FencingToken;
import io.fencer.core.LimitExceededException;
import io.fencer.core.SessionExpiredException;
import io.fencer.lock.Event;
import io.fencer.server.raft.AppliedListener;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The Acquire calls waiting in a lock's queue, keyed by session and lock: a {@link Event.Granted} for the key
 * completes every waiting call with the token, a {@link Event.WaitDropped} fails them with
 * {@link SessionExpiredException}. Calls register before they propose, so a grant applied right after the queued
 * result is never missed.
 */
public final class PendingAcquires implements AppliedListener {
    /** The most calls waiting at once in this server; more are refused with LIMIT_EXCEEDED. */
    static final int WAITING_CALLS_MAX = 100_000;

    private final ConcurrentHashMap<Key, List<Waiter>> waiters = new ConcurrentHashMap<>();
    private final AtomicInteger count = new AtomicInteger();
    /**
     * The grants answered early ({@link #takeHandOff}) whose events have not applied yet, by wait: their event answers
     * only a retry of a call answered then (same request id: that answer was lost), since a later call of the same
     * session for the same lock waits for a later grant (the session may be releasing this one).
     */
    private final ConcurrentHashMap<Key, HandedOff> handedOff = new ConcurrentHashMap<>();

    /** A grant answered early: its token, and the request ids of the calls answered. */
    private record HandedOff(long token, java.util.Set<String> requestIds) {}

    /**
     * The identity of a wait in the state machine: one session queued on one lock, or for a permit of one semaphore.
     * The kind is part of it because a plain lock may be named like a slot ({@code x/permit-0} while no semaphore
     * {@code x} is in use): its grant must not answer the session's wait for the plain lock {@code x}.
     */
    record Key(long sessionId, String lock, boolean permit) {}

    /**
     * One waiting call; {@link #outcome} completes with the grant or fails with the session's end. A call whose client
     * takes grants answered before they are durable ({@code early}) may be completed by {@link #takeHandOff}, which
     * sets {@link #handOff} first.
     */
    static final class Waiter {
        final Key key;
        final boolean early;
        /** The call's request id (retries of one attempt reuse it); null when not told. */
        final String requestId;
        final CompletableFuture<FencingToken> outcome = new CompletableFuture<>();
        /** Set before {@link #outcome} completes when the grant was answered early: where its release was queued. */
        volatile io.fencer.server.raft.Proposer.EarlyRelease handOff;

        Waiter(Key key, boolean early, String requestId) {
            this.key = key;
            this.early = early;
            this.requestId = requestId;
        }
    }

    Waiter register(long sessionId, String lock, boolean permit) {
        return register(sessionId, lock, permit, false, null);
    }

    /**
     * Registers a waiting call of {@code requestId}; {@code early}: its client takes a grant answered before it is
     * durable.
     */
    Waiter register(long sessionId, String lock, boolean permit, boolean early, String requestId) {
        if (count.incrementAndGet() > WAITING_CALLS_MAX) {
            count.decrementAndGet();
            throw new LimitExceededException("waitingCallsMax", WAITING_CALLS_MAX, "this server already has "
                    + WAITING_CALLS_MAX + " acquire calls waiting, the most allowed (waitingCallsMax)");
        }
        Waiter waiter = new Waiter(new Key(sessionId, lock, permit), early, requestId);
        waiters.compute(waiter.key, (key, list) -> {
            List<Waiter> updated = list == null ? new ArrayList<>(1) : new ArrayList<>(list);
            updated.add(waiter);
            return updated;
        });
        return waiter;
    }

    /**
     * Removes {@code waiter}; returns how many other calls still wait for the same key, or -1 when it was no
     * longer registered (an event has completed it, or it was removed before).
     */
    int unregister(Waiter waiter) {
        int[] remaining = {-1};
        waiters.computeIfPresent(waiter.key, (key, list) -> {
            if (!list.contains(waiter)) {
                return list;
            }
            List<Waiter> updated = new ArrayList<>(list);
            updated.remove(waiter);
            remaining[0] = updated.size();
            return updated.isEmpty() ? null : updated;
        });
        if (remaining[0] >= 0) {
            count.decrementAndGet();
        }
        return remaining[0];
    }

    /**
     * Returns how many Acquire calls on this server wait for {@code sessionId}'s place in {@code lock}'s queue, or in
     * the semaphore {@code lock}'s when {@code permit}.
     */
    int waiting(long sessionId, String lock, boolean permit) {
        List<Waiter> list = waiters.get(new Key(sessionId, lock, permit));
        return list == null ? 0 : list.size();
    }

    /**
     * True when calls on this server wait for {@code sessionId}'s place in the plain lock {@code lock}'s queue, and
     * every one of them takes a grant answered before it is durable.
     */
    boolean handOffEligible(long sessionId, String lock) {
        List<Waiter> list = waiters.get(new Key(sessionId, lock, false));
        return list != null && !list.isEmpty() && list.stream().allMatch(waiter -> waiter.early);
    }

    /**
     * Takes the calls waiting for {@code sessionId}'s place in {@code lock}'s queue, to answer them with {@code token}
     * before the grant is durable, and marks the grant's event to answer nobody. Takes nothing, and returns an empty
     * list, when no call waits or one of them does not take early answers.
     */
    List<Waiter> takeHandOff(long sessionId, String lock, long token) {
        Key key = new Key(sessionId, lock, false);
        List<Waiter> taken = new ArrayList<>();
        waiters.computeIfPresent(key, (k, list) -> {
            if (!list.stream().allMatch(waiter -> waiter.early)) {
                return list;
            }
            java.util.Set<String> requestIds = new java.util.HashSet<>();
            list.forEach(waiter -> requestIds.add(waiter.requestId));
            handedOff.put(key, new HandedOff(token, requestIds));
            taken.addAll(list);
            return null;
        });
        count.addAndGet(-taken.size());
        return taken;
    }

    /** Forgets the grants answered early whose events never came (their releases were lost with an incarnation). */
    void forgetHandOffs() {
        handedOff.clear();
    }

    /** Returns how many Acquire calls wait on this server. */
    public int size() {
        return count.get();
    }

    @Override
    public void onApplied(List<Event> events) {
        for (Event event : events) {
            if (event instanceof Event.Granted granted) {
                // A semaphore's permit is granted as its slot lock; its calls wait under the semaphore's name. The
                // event names the semaphore: a plain lock may have the slot form of a semaphore in use (format level 4).
                Key key = granted.semaphore() == null ? new Key(granted.sessionId(), granted.token().lock(), false)
                        : new Key(granted.sessionId(), granted.semaphore(), true);
                HandedOff early = handedOff.isEmpty() ? null : handedOff.get(key);
                boolean answeredEarly = early != null && early.token() == granted.token().value()
                        && handedOff.remove(key, early);
                for (Waiter waiter : answeredEarly ? takeRetries(key, early.requestIds()) : take(key)) {
                    waiter.outcome.complete(granted.token());
                }
            } else if (event instanceof Event.WaitDropped dropped) {
                SessionExpiredException error = new SessionExpiredException(dropped.sessionId(), "session "
                        + dropped.sessionId() + " ended while waiting for lock '" + dropped.lock() + "'");
                // A dropped wait does not say its kind; at format level 4 a lock and a semaphore may share a name.
                for (boolean permit : new boolean[] {false, true}) {
                    for (Waiter waiter : take(new Key(dropped.sessionId(), dropped.lock(), permit))) {
                        waiter.outcome.completeExceptionally(error);
                    }
                }
            }
        }
    }

    /** Takes the calls waiting for {@code key} that retry one of {@code requestIds}; the others keep waiting. */
    private List<Waiter> takeRetries(Key key, java.util.Set<String> requestIds) {
        List<Waiter> taken = new ArrayList<>();
        waiters.computeIfPresent(key, (k, list) -> {
            List<Waiter> left = new ArrayList<>(list.size());
            for (Waiter waiter : list) {
                (waiter.requestId != null && requestIds.contains(waiter.requestId) ? taken : left).add(waiter);
            }
            return left.isEmpty() ? null : left;
        });
        count.addAndGet(-taken.size());
        return taken;
    }

    private List<Waiter> take(Key key) {
        List<Waiter> taken = waiters.remove(key);
        if (taken == null) {
            return List.of();
        }
        count.addAndGet(-taken.size());
        return taken;
    }

    /** Fails every waiting call, e.g. when the server shuts down. */
    public void failAll(FencerException error) {
        for (Map.Entry<Key, List<Waiter>> entry : waiters.entrySet()) {
            for (Waiter waiter : take(entry.getKey())) {
                waiter.outcome.completeExceptionally(error);
            }
        }
    }
}
