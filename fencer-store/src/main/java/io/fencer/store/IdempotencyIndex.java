package io.fencer.store;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;

/**
 * The in-memory index of the {@code idem} column family, in creation order, bounded by count and age.
 *
 * <p>An entry older than the age bound is treated as absent at once, before any sweep removes it. Entries
 * loaded on open count their age from the open (ticker readings of a previous process mean nothing).
 * Thread-safe; every method is a short critical section with no I/O.
 */
final class IdempotencyIndex {
    /** One scope's idempotency key. */
    record Key(String scope, String idempotencyKey) {}

    /** The first result of a write under {@link #key}, created at {@code createdNanos} (ticker time). */
    record Entry(Key key, StoreCodec.IdempotencyRecord record, long createdNanos) {}

    private final int entriesMax;
    private final long ageNanosMax;
    /** Insertion-ordered: the first entry is the oldest. Guarded by this. */
    private final LinkedHashMap<Key, Entry> entries = new LinkedHashMap<>();
    /** Guarded by this. */
    private long sequenceNext = 1;

    IdempotencyIndex(int entriesMax, long ageNanosMax) {
        this.entriesMax = entriesMax;
        this.ageNanosMax = ageNanosMax;
    }

    /** Adds an entry read back on open; call in ascending sequence order. */
    synchronized void load(Entry entry) {
        entries.put(entry.key(), entry);
        sequenceNext = Math.max(sequenceNext, entry.record().sequence() + 1);
    }

    /** Returns the live entry for {@code key}, or null when there is none or it is older than the age bound. */
    synchronized Entry find(Key key, long nowNanos) {
        Entry entry = entries.get(key);
        return entry == null || isAged(entry, nowNanos) ? null : entry;
    }

    synchronized long nextSequence() {
        return sequenceNext++;
    }

    /** Records the entry of a durable write, replacing any older one of the same key as the newest. */
    synchronized void put(Entry entry) {
        entries.remove(entry.key());
        entries.put(entry.key(), entry);
    }

    /** Returns true when there are more entries than the bound allows. */
    synchronized boolean isOverfull() {
        return entries.size() > entriesMax;
    }

    synchronized int size() {
        return entries.size();
    }

    /**
     * Returns up to {@code limit} entries to evict, oldest first: those beyond the count bound, then those past
     * the age bound. Eviction below the bound leaves {@code slack} free places, so a full index is swept once
     * per {@code slack} writes, not on every write.
     */
    synchronized List<Entry> victims(long nowNanos, int limit, int slack) {
        List<Entry> victims = new ArrayList<>();
        int excess = entries.size() > entriesMax ? entries.size() - Math.max(0, entriesMax - slack) : 0;
        for (Iterator<Entry> it = entries.values().iterator(); it.hasNext() && victims.size() < limit;) {
            Entry entry = it.next();
            if (victims.size() < excess || isAged(entry, nowNanos)) {
                victims.add(entry);
            } else {
                break; // creation order: every later entry is younger and within the count bound
            }
        }
        return victims;
    }

    /** Removes {@code entry} unless it was replaced meanwhile; returns true when removed. */
    synchronized boolean removeIfCurrent(Entry entry) {
        Entry current = entries.get(entry.key());
        if (current != entry) {
            return false;
        }
        entries.remove(entry.key());
        return true;
    }

    /** Returns true when {@code entry} is still the index's entry for its key. */
    synchronized boolean isCurrent(Entry entry) {
        return entries.get(entry.key()) == entry;
    }

    private boolean isAged(Entry entry, long nowNanos) {
        return nowNanos - entry.createdNanos() > ageNanosMax;
    }
}
