package io.fencer.server.store;

import io.fencer.core.LimitExceededException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The bytes the store's open units buffer, over all units and identities, against {@code unitBytesBufferedMax}
 * ({@link io.fencer.store.StoreOptions#unitBytesBufferedMax}). Each unit may buffer up to {@code batchBytesMax} (4
 * MiB) until it ends, and {@code unitsOpenMax} (10,000) of them may be open: 40 GiB, held in this server's heap for up
 * to a unit's timeout. The service takes an op's bytes here as a UnitWrite buffers it and gives them back once the
 * unit has ended (committed, aborted, expired, preempted, or lost with its leader), when it sees the unit ended: at
 * the unit's next call, at the store's periodic sweep, or when a UnitWrite would otherwise be refused.
 */
final class UnitBytes {
    /**
     * What one buffered op costs beyond its key and value: the op, its arrays' headers and its place in the unit's
     * list, about 70 bytes on a 64-bit JVM, rounded up; so that ops of empty keys and values are counted too.
     */
    static final int OP_OVERHEAD_BYTES = 80;

    private final long max;
    private final AtomicLong held = new AtomicLong();

    /** Bounds the bytes held at {@code max}. */
    UnitBytes(long max) {
        this.max = max;
    }

    /** Returns the bytes {@code op} counts: its key, its value (a put's) and {@link #OP_OVERHEAD_BYTES}. */
    static long of(io.fencer.api.v1.Op op) {
        return switch (op.getOpCase()) {
            case PUT -> op.getPut().getKey().size() + (long) op.getPut().getValue().size() + OP_OVERHEAD_BYTES;
            case DELETE -> op.getDelete().getKey().size() + (long) OP_OVERHEAD_BYTES;
            default -> OP_OVERHEAD_BYTES; // refused by StoreWire.ops before anything is taken
        };
    }

    /**
     * Takes {@code bytes} for unit {@code unitId}, which holds {@code unitHeld} already; when they would pass the
     * bound, runs {@code reclaim} (which gives back the bytes of units that ended unseen) and tries once more.
     *
     * @throws LimitExceededException ({@code unitBytesBufferedMax}) naming the bound, the bytes held and asked for
     */
    void take(long bytes, String unitId, long unitHeld, Runnable reclaim) {
        if (tryTake(bytes)) {
            return;
        }
        reclaim.run();
        if (tryTake(bytes)) {
            return;
        }
        throw new LimitExceededException("unitBytesBufferedMax", max, "the open units of this store buffer "
                + held.get() + " bytes (unit " + unitId + " " + unitHeld + " of them); this UnitWrite's " + bytes
                + " more (its keys and values, and " + OP_OVERHEAD_BYTES + " per op) would pass the server's"
                + " unitBytesBufferedMax of " + max + " (--unit-bytes-buffered-max). Nothing of this request was"
                + " buffered and the unit keeps what it holds: commit it, or abort it, or retry once other units end");
    }

    private boolean tryTake(long bytes) {
        while (true) {
            long current = held.get();
            if (current + bytes > max) {
                return false;
            }
            if (held.compareAndSet(current, current + bytes)) {
                return true;
            }
        }
    }

    /** Gives back {@code bytes} taken before. */
    void give(long bytes) {
        if (bytes != 0) {
            held.addAndGet(-bytes);
        }
    }

    /** Returns the bytes held now. */
    long held() {
        return held.get();
    }
}
