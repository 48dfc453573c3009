package io.fencer.lock;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What each quota identity's sessions hold: one {@link UsageCounter} per identity with an open session, and the
 * counters changed since the server last took the changes. A derived index of the state: rebuilt when a snapshot is
 * read (each restored {@link SessionRecord} counts itself), never written, and recounted by {@link LockInvariants}.
 */
final class UsageIndex {
    /** The counters by identity; only looked up by key. An identity leaves when its count is back to zero. */
    private final HashMap<String, UsageCounter> usage = new HashMap<>();
    /** The counters changed since {@link #takeChanges()} last ran, each once, in the order first changed. */
    private final List<UsageCounter> changed = new ArrayList<>();

    /** Returns the usage counter of {@code quotaIdentity}, made (at zero) when it has none. */
    UsageCounter counter(String quotaIdentity) {
        return usage.computeIfAbsent(quotaIdentity, identity -> new UsageCounter(identity, changed));
    }

    /** Drops the counter of an identity whose count is back to zero, so that the index holds only identities in use. */
    void dropIfUnused(String quotaIdentity) {
        UsageCounter counter = usage.get(quotaIdentity);
        if (counter != null && counter.isZero()) {
            usage.remove(quotaIdentity);
        }
    }

    /** What the sessions of {@code quotaIdentity} hold now; {@link IdentityUsage#NONE} when it has no session. */
    IdentityUsage of(String quotaIdentity) {
        UsageCounter counter = usage.get(quotaIdentity);
        return counter == null ? IdentityUsage.NONE : counter.view();
    }

    /** The usage of every identity with an open session, in no particular order. */
    Map<String, IdentityUsage> byIdentity() {
        Map<String, IdentityUsage> views = new HashMap<>(usage.size() * 2);
        for (UsageCounter counter : usage.values()) {
            views.put(counter.identity, counter.view());
        }
        return views;
    }

    /**
     * Returns the usage of each identity whose usage changed since the last call, in the order first changed, and
     * forgets the changes: {@link IdentityUsage#NONE} for an identity whose sessions all ended.
     */
    Map<String, IdentityUsage> takeChanges() {
        Map<String, IdentityUsage> changes = new LinkedHashMap<>();
        for (UsageCounter counter : changed) {
            counter.unlist();
            // A counter dropped at zero and made again holds the newer count: it is the one in the index.
            UsageCounter current = usage.get(counter.identity);
            changes.put(counter.identity, current == null ? IdentityUsage.NONE : current.view());
        }
        changed.clear();
        return changes;
    }

    /**
     * Checks that the index holds, for each identity with a session and no other, the counts its sessions make up.
     *
     * @throws IllegalStateException naming the values when it does not
     */
    void check(Collection<SessionRecord> sessions) {
        Map<String, int[]> counted = new HashMap<>();
        for (SessionRecord session : sessions) {
            int[] counts = counted.computeIfAbsent(session.quotaIdentity, identity -> new int[3]);
            counts[0]++;
            counts[1] += session.lockCount();
            counts[2] += session.waitCount();
        }
        if (!counted.keySet().equals(usage.keySet())) {
            throw LockInvariants.broken("the usage index lists identities %s but sessions have %s", usage.keySet(),
                    counted.keySet());
        }
        for (Map.Entry<String, int[]> entry : counted.entrySet()) {
            int[] counts = entry.getValue();
            IdentityUsage indexed = usage.get(entry.getKey()).view();
            if (!indexed.equals(new IdentityUsage(counts[0], counts[1], counts[2]))) {
                throw LockInvariants.broken("identity %s has %s in the usage index but its sessions have %d sessions,"
                        + " %d locks, %d waiters", entry.getKey(), indexed, counts[0], counts[1], counts[2]);
            }
        }
    }
}
