package io.fencer.server.store;

import io.fencer.core.LimitExceededException;
import io.fencer.store.Unit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import java.util.function.ToIntFunction;

/**
 * The quota of open units per identity ({@code unitsPerIdentityMax}): without it one client, holding tokens of many
 * scopes, could keep every one of the store's {@code unitsOpenMax} places for a unit's timeout and leave every other
 * client refused. It counts the units this store began and that are still open, by the identity that began each (a
 * client certificate's CN, or an anonymous caller's address); a unit leaves the count once it commits, aborts or times
 * out. The units of a replicated store are held by the leader that began them, so its count is that leader's.
 */
final class UnitQuota {
    /** Each identity may hold this share of the store's open units, unless the ACL file says otherwise ... */
    static final int SHARE_DIVISOR = 10;
    /** ... and at least this many, or all of them on a store that allows fewer (a test's, or a tiny one). */
    static final int SHARE_FLOOR = 10;

    private final ToIntFunction<String> quotaOf;
    /** The units each identity began that were open at the last look; an identity with none is dropped by sweeps. */
    private final Map<String, List<StoreUnit>> openByIdentity = new ConcurrentHashMap<>();

    /** Returns the quota of an identity the ACL file says nothing of, on a store of {@code unitsOpenMax}. */
    static int defaultQuota(int unitsOpenMax) {
        return Math.max(unitsOpenMax / SHARE_DIVISOR, Math.min(unitsOpenMax, SHARE_FLOOR));
    }

    /** Counts against {@code quotaOf}, the quota of an identity. */
    UnitQuota(ToIntFunction<String> quotaOf) {
        this.quotaOf = quotaOf;
    }

    /**
     * Begins a unit for {@code identity} with {@code begin}, unless the identity already has its quota of open units.
     *
     * @throws LimitExceededException ({@code unitsPerIdentityMax}) naming the identity, its open units and its quota
     */
    StoreUnit begin(String identity, Supplier<StoreUnit> begin) {
        while (true) {
            List<StoreUnit> open = openByIdentity.computeIfAbsent(identity, key -> new ArrayList<>());
            synchronized (open) {
                if (openByIdentity.get(identity) != open) {
                    continue; // a sweep dropped this list, empty, before this thread held it: take the new one
                }
                open.removeIf(unit -> unit.state() != Unit.State.OPEN);
                int quota = quotaOf.applyAsInt(identity);
                if (open.size() >= quota) {
                    throw new LimitExceededException("unitsPerIdentityMax", quota, identity, "identity '" + identity
                            + "' has " + open.size() + " units open on this store; 1 more would pass its quota"
                            + " unitsPerIdentityMax of " + quota + ": commit or abort those it no longer needs, or ask"
                            + " the operator for a higher quota");
                }
                StoreUnit unit = begin.get();
                open.add(unit);
                return unit;
            }
        }
    }

    /** Drops the ended units, and the identities left with none, so that the map holds only who has units open. */
    void sweep() {
        for (Map.Entry<String, List<StoreUnit>> entry : openByIdentity.entrySet()) {
            List<StoreUnit> open = entry.getValue();
            synchronized (open) {
                open.removeIf(unit -> unit.state() != Unit.State.OPEN);
                if (open.isEmpty()) {
                    // removed while locked, and only if still this list: a begin that took it meanwhile made another
                    openByIdentity.remove(entry.getKey(), open);
                }
            }
        }
    }
}
