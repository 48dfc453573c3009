package io.fencer.store;

import io.fencer.core.Ticker;
import io.fencer.core.TokenKeys;
import java.time.Duration;
import java.util.Objects;

/**
 * The configuration of a {@link StoreEngine}: the token keys it requires (if any), every limit it enforces,
 * and the ticker it measures unit deadlines and idempotency ages with.
 *
 * <p>Start from {@link #defaults()} and derive with the {@code with...} methods:
 * <pre>{@code
 * StoreOptions options = StoreOptions.defaults().withKeys(TokenKeys.load(keyFile)).withUnitDurationMax(
 *         Duration.ofSeconds(30));
 * }</pre>
 *
 * @param keys the keys signed sequencers must verify with, or null to accept plain (unsigned) sequencers
 * @param keyBytesMax the longest key, in bytes
 * @param valueBytesMax the longest value, in bytes
 * @param opsPerWriteMax the most ops in one write or one unit
 * @param batchBytesMax the most bytes of keys and values in one write or one unit
 * @param idempotencyEntriesMax the most idempotency records kept; the oldest are evicted beyond it
 * @param idempotencyAgeMax the age after which an idempotency record is forgotten
 * @param unitDurationMax the longest timeout a unit may ask for
 * @param unitsOpenMax the most units open at once, over all scopes
 * @param unitBytesBufferedMax the most bytes the open units may buffer at once, over all units (each op counts its key,
 *     its value and a fixed overhead); the server serving the store enforces it as a UnitWrite buffers ops
 * @param requestBytesQueuedMax the most bytes of requests (encoded) the server serving the store holds for its
 *     workers at once, waiting for one or being served, over all callers; past it a call is refused, though a
 *     request alone is always taken
 * @param scopesMax the most scopes the store holds
 * @param ticker the source of time for unit deadlines and idempotency ages
 */
public record StoreOptions(
        TokenKeys keys,
        int keyBytesMax,
        int valueBytesMax,
        int opsPerWriteMax,
        int batchBytesMax,
        int idempotencyEntriesMax,
        Duration idempotencyAgeMax,
        Duration unitDurationMax,
        int unitsOpenMax,
        long unitBytesBufferedMax,
        long requestBytesQueuedMax,
        int scopesMax,
        Ticker ticker) {
    public static final int KEY_BYTES_MAX_DEFAULT = 1024;
    public static final int VALUE_BYTES_MAX_DEFAULT = 1024 * 1024;
    public static final int OPS_PER_WRITE_MAX_DEFAULT = 1000;
    public static final int BATCH_BYTES_MAX_DEFAULT = 4 * 1024 * 1024;
    public static final int IDEMPOTENCY_ENTRIES_MAX_DEFAULT = 100_000;
    public static final Duration IDEMPOTENCY_AGE_MAX_DEFAULT = Duration.ofHours(1);
    public static final Duration UNIT_DURATION_MAX_DEFAULT = Duration.ofSeconds(60);
    public static final int UNITS_OPEN_MAX_DEFAULT = 10_000;
    public static final int SCOPES_MAX_DEFAULT = 1_000_000;
    /** The highest default {@code unitBytesBufferedMax}, however large the heap. */
    public static final long UNIT_BYTES_BUFFERED_MAX_CAP = 1L << 30;
    /** The lowest default {@code requestBytesQueuedMax}, however small the heap: three requests of 5 MiB and more. */
    public static final long REQUEST_BYTES_QUEUED_MAX_FLOOR = 16L << 20;
    /** The highest default {@code requestBytesQueuedMax}, however large the heap. */
    public static final long REQUEST_BYTES_QUEUED_MAX_CAP = 512L << 20;

    public StoreOptions {
        positive("keyBytesMax", keyBytesMax);
        positive("valueBytesMax", valueBytesMax);
        positive("opsPerWriteMax", opsPerWriteMax);
        positive("batchBytesMax", batchBytesMax);
        positive("idempotencyEntriesMax", idempotencyEntriesMax);
        positive("idempotencyAgeMax", idempotencyAgeMax);
        positive("unitDurationMax", unitDurationMax);
        positive("unitsOpenMax", unitsOpenMax);
        positive("unitBytesBufferedMax", unitBytesBufferedMax);
        positive("requestBytesQueuedMax", requestBytesQueuedMax);
        positive("scopesMax", scopesMax);
        Objects.requireNonNull(ticker, "ticker");
    }

    /** Returns the default limits, plain tokens accepted, and the system ticker. */
    public static StoreOptions defaults() {
        return new StoreOptions(null, KEY_BYTES_MAX_DEFAULT, VALUE_BYTES_MAX_DEFAULT, OPS_PER_WRITE_MAX_DEFAULT,
                BATCH_BYTES_MAX_DEFAULT, IDEMPOTENCY_ENTRIES_MAX_DEFAULT, IDEMPOTENCY_AGE_MAX_DEFAULT,
                UNIT_DURATION_MAX_DEFAULT, UNITS_OPEN_MAX_DEFAULT, unitBytesBufferedMaxDefault(Runtime.getRuntime()
                        .maxMemory()), requestBytesQueuedMaxDefault(Runtime.getRuntime().maxMemory()),
                SCOPES_MAX_DEFAULT, Ticker.system());
    }

    /** Returns these options requiring sequencers signed by {@code keys}; null accepts plain ones. */
    public StoreOptions withKeys(TokenKeys keys) {
        return new StoreOptions(keys, keyBytesMax, valueBytesMax, opsPerWriteMax, batchBytesMax,
                idempotencyEntriesMax, idempotencyAgeMax, unitDurationMax, unitsOpenMax, unitBytesBufferedMax,
                requestBytesQueuedMax, scopesMax, ticker);
    }

    public StoreOptions withKeyBytesMax(int keyBytesMax) {
        return new StoreOptions(keys, keyBytesMax, valueBytesMax, opsPerWriteMax, batchBytesMax,
                idempotencyEntriesMax, idempotencyAgeMax, unitDurationMax, unitsOpenMax, unitBytesBufferedMax,
                requestBytesQueuedMax, scopesMax, ticker);
    }

    public StoreOptions withValueBytesMax(int valueBytesMax) {
        return new StoreOptions(keys, keyBytesMax, valueBytesMax, opsPerWriteMax, batchBytesMax,
                idempotencyEntriesMax, idempotencyAgeMax, unitDurationMax, unitsOpenMax, unitBytesBufferedMax,
                requestBytesQueuedMax, scopesMax, ticker);
    }

    public StoreOptions withOpsPerWriteMax(int opsPerWriteMax) {
        return new StoreOptions(keys, keyBytesMax, valueBytesMax, opsPerWriteMax, batchBytesMax,
                idempotencyEntriesMax, idempotencyAgeMax, unitDurationMax, unitsOpenMax, unitBytesBufferedMax,
                requestBytesQueuedMax, scopesMax, ticker);
    }

    public StoreOptions withBatchBytesMax(int batchBytesMax) {
        return new StoreOptions(keys, keyBytesMax, valueBytesMax, opsPerWriteMax, batchBytesMax,
                idempotencyEntriesMax, idempotencyAgeMax, unitDurationMax, unitsOpenMax, unitBytesBufferedMax,
                requestBytesQueuedMax, scopesMax, ticker);
    }

    public StoreOptions withIdempotencyEntriesMax(int idempotencyEntriesMax) {
        return new StoreOptions(keys, keyBytesMax, valueBytesMax, opsPerWriteMax, batchBytesMax,
                idempotencyEntriesMax, idempotencyAgeMax, unitDurationMax, unitsOpenMax, unitBytesBufferedMax,
                requestBytesQueuedMax, scopesMax, ticker);
    }

    public StoreOptions withIdempotencyAgeMax(Duration idempotencyAgeMax) {
        return new StoreOptions(keys, keyBytesMax, valueBytesMax, opsPerWriteMax, batchBytesMax,
                idempotencyEntriesMax, idempotencyAgeMax, unitDurationMax, unitsOpenMax, unitBytesBufferedMax,
                requestBytesQueuedMax, scopesMax, ticker);
    }

    public StoreOptions withUnitDurationMax(Duration unitDurationMax) {
        return new StoreOptions(keys, keyBytesMax, valueBytesMax, opsPerWriteMax, batchBytesMax,
                idempotencyEntriesMax, idempotencyAgeMax, unitDurationMax, unitsOpenMax, unitBytesBufferedMax,
                requestBytesQueuedMax, scopesMax, ticker);
    }

    public StoreOptions withUnitsOpenMax(int unitsOpenMax) {
        return new StoreOptions(keys, keyBytesMax, valueBytesMax, opsPerWriteMax, batchBytesMax,
                idempotencyEntriesMax, idempotencyAgeMax, unitDurationMax, unitsOpenMax, unitBytesBufferedMax,
                requestBytesQueuedMax, scopesMax, ticker);
    }

    public StoreOptions withUnitBytesBufferedMax(long unitBytesBufferedMax) {
        return new StoreOptions(keys, keyBytesMax, valueBytesMax, opsPerWriteMax, batchBytesMax,
                idempotencyEntriesMax, idempotencyAgeMax, unitDurationMax, unitsOpenMax, unitBytesBufferedMax,
                requestBytesQueuedMax, scopesMax, ticker);
    }

    /**
     * Returns the default {@code unitBytesBufferedMax} of a JVM whose heap may grow to {@code heapBytesMax}: a quarter
     * of it, within [{@link #BATCH_BYTES_MAX_DEFAULT}, {@link #UNIT_BYTES_BUFFERED_MAX_CAP}]. Without a bound of its
     * own, the open units of a store at its other defaults (10,000 of 4 MiB each) could buffer 40 GiB, and a server
     * started without {@code -Xmx} gets a quarter of the machine's memory: a bound in proportion to the heap leaves the
     * rest of it to the lock service, the write queue and the answers in flight.
     */
    static long unitBytesBufferedMaxDefault(long heapBytesMax) {
        return Math.max(BATCH_BYTES_MAX_DEFAULT, Math.min(heapBytesMax / 4, UNIT_BYTES_BUFFERED_MAX_CAP));
    }

    public StoreOptions withRequestBytesQueuedMax(long requestBytesQueuedMax) {
        return new StoreOptions(keys, keyBytesMax, valueBytesMax, opsPerWriteMax, batchBytesMax,
                idempotencyEntriesMax, idempotencyAgeMax, unitDurationMax, unitsOpenMax, unitBytesBufferedMax,
                requestBytesQueuedMax, scopesMax, ticker);
    }

    /**
     * Returns the default {@code requestBytesQueuedMax} of a JVM whose heap may grow to {@code heapBytesMax}: an
     * eighth of it, within [{@link #REQUEST_BYTES_QUEUED_MAX_FLOOR}, {@link #REQUEST_BYTES_QUEUED_MAX_CAP}]. The
     * server's count of calls waiting for a worker (4,096) alone would let requests of 5 MiB hold 20 GiB; an eighth
     * leaves the heap to the open units' quarter ({@link #unitBytesBufferedMaxDefault}), the write queue, the answers
     * in flight and the lock service.
     */
    static long requestBytesQueuedMaxDefault(long heapBytesMax) {
        return Math.max(REQUEST_BYTES_QUEUED_MAX_FLOOR, Math.min(heapBytesMax / 8, REQUEST_BYTES_QUEUED_MAX_CAP));
    }

    public StoreOptions withScopesMax(int scopesMax) {
        return new StoreOptions(keys, keyBytesMax, valueBytesMax, opsPerWriteMax, batchBytesMax,
                idempotencyEntriesMax, idempotencyAgeMax, unitDurationMax, unitsOpenMax, unitBytesBufferedMax,
                requestBytesQueuedMax, scopesMax, ticker);
    }

    public StoreOptions withTicker(Ticker ticker) {
        return new StoreOptions(keys, keyBytesMax, valueBytesMax, opsPerWriteMax, batchBytesMax,
                idempotencyEntriesMax, idempotencyAgeMax, unitDurationMax, unitsOpenMax, unitBytesBufferedMax,
                requestBytesQueuedMax, scopesMax, ticker);
    }

    private static void positive(String name, long value) {
        if (value <= 0) {
            throw new IllegalArgumentException(name + " must be positive, got " + value);
        }
    }

    private static void positive(String name, Duration value) {
        Objects.requireNonNull(value, name);
        if (value.isNegative() || value.isZero()) {
            throw new IllegalArgumentException(name + " must be positive, got " + value);
        }
    }
}
