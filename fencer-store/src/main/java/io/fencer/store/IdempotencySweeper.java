package io.fencer.store;

import io.fencer.core.Ticker;
import io.fencer.core.UnavailableException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.rocksdb.RocksDBException;
import org.rocksdb.WriteBatch;

/**
 * The eviction of idempotency records beyond {@code idempotencyEntriesMax} (oldest first) and older than
 * {@code idempotencyAgeMax}, from the {@link IdempotencyIndex} and the {@code idem} column family together.
 *
 * <p>Bounded: a sweep takes at most {@value #SWEEP_BATCH} victims per round and a number of rounds that covers the
 * index once, plus two. Each scope's victims are deleted under the scope's guard, and an entry is removed from the
 * index only if it is still current, so a write that replaced it meanwhile keeps its record. The deletes are not
 * synced: losing one in a crash only resurrects a valid first result.
 */
final class IdempotencySweeper {
    private static final int SWEEP_BATCH = 256;

    private final StoreDatabase database;
    private final ScopeTable scopes;
    private final IdempotencyIndex idempotency;
    private final int entriesMax;
    private final Ticker ticker;

    IdempotencySweeper(StoreDatabase database, ScopeTable scopes, IdempotencyIndex idempotency, int entriesMax,
            Ticker ticker) {
        this.database = database;
        this.scopes = scopes;
        this.idempotency = idempotency;
        this.entriesMax = entriesMax;
        this.ticker = ticker;
    }

    /** Evicts what the bounds allow no longer; returns the number of records evicted. */
    int sweep() {
        int roundsMax = entriesMax / SWEEP_BATCH + 2;
        int slack = Math.max(1, entriesMax / 100);
        int evicted = 0;
        database.enter();
        try {
            for (int round = 0; round < roundsMax; round++) {
                List<IdempotencyIndex.Entry> victims = idempotency.victims(ticker.nanoTime(), SWEEP_BATCH, slack);
                int evictedNow = victims.isEmpty() ? 0 : evict(victims);
                evicted += evictedNow;
                if (evictedNow == 0) {
                    break;
                }
            }
        } finally {
            database.exit();
        }
        return evicted;
    }

    private int evict(List<IdempotencyIndex.Entry> victims) {
        Map<String, List<IdempotencyIndex.Entry>> byScope = new LinkedHashMap<>();
        for (IdempotencyIndex.Entry victim : victims) {
            byScope.computeIfAbsent(victim.key().scope(), scope -> new ArrayList<>()).add(victim);
        }
        int evicted = 0;
        for (Map.Entry<String, List<IdempotencyIndex.Entry>> group : byScope.entrySet()) {
            ScopeState state = scopes.lock(group.getKey());
            try (WriteBatch batch = new WriteBatch()) {
                List<IdempotencyIndex.Entry> current = group.getValue().stream().filter(idempotency::isCurrent)
                        .toList();
                for (IdempotencyIndex.Entry entry : current) {
                    batch.delete(database.idempotencyFamily(),
                            StoreCodec.idempotencyKey(entry.key().scope(), entry.key().idempotencyKey()));
                }
                if (!current.isEmpty()) {
                    database.writeUnsynced(batch);
                }
                for (IdempotencyIndex.Entry entry : current) {
                    evicted += idempotency.removeIfCurrent(entry) ? 1 : 0;
                }
            } catch (RocksDBException e) {
                throw new UnavailableException("evicting idempotency records of scope '" + group.getKey()
                        + "' failed: " + e.getMessage(), e);
            } finally {
                scopes.unlock(state);
            }
        }
        return evicted;
    }
}
