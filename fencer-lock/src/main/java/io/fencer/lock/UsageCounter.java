package io.fencer.lock;

import java.util.List;

/**
 * The mutable count behind one identity's {@link IdentityUsage}, shared by the {@link SessionRecord}s of its
 * sessions, which change it whenever they open, end, take or leave a lock. It is a derived index of the state, never
 * written to snapshots: reading a snapshot rebuilds it from the sessions, and {@link LockStateMachine#checkInvariants}
 * recounts it. A counter that changes joins its {@link UsageIndex}'s list of changed counters once, so that the
 * server can publish the new counts after each log entry without scanning every identity.
 */
final class UsageCounter {
    final String identity;
    private final List<UsageCounter> changed;
    private boolean listed;
    int sessions;
    int locks;
    int waiters;

    UsageCounter(String identity, List<UsageCounter> changed) {
        this.identity = identity;
        this.changed = changed;
    }

    /** Adds the deltas, which keep every count at 0 or more; lists this counter as changed. */
    void add(int sessionsDelta, int locksDelta, int waitersDelta) {
        sessions += sessionsDelta;
        locks += locksDelta;
        waiters += waitersDelta;
        assert sessions >= 0 && locks >= 0 && waiters >= 0 && waiters <= locks
                : "usage of " + identity + " went out of range: " + view();
        if (!listed) {
            listed = true;
            changed.add(this);
        }
    }

    /** Marks the counter as published: its next change lists it again. */
    void unlist() {
        listed = false;
    }

    boolean isZero() {
        return sessions == 0 && locks == 0 && waiters == 0;
    }

    IdentityUsage view() {
        return new IdentityUsage(sessions, locks, waiters);
    }
}
