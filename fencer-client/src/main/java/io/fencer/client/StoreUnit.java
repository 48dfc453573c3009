package io.fencer.client;

import java.nio.charset.StandardCharsets;

/**
 * An open unit of a {@link FencedStore}: ops sent over several requests, checked once when the unit began and
 * applied all or nothing at {@link #commit()}. The unit holds its scope meanwhile; a write or unit with a higher
 * token preempts it, and the commit then fails with {@link StaleWriteException} with nothing applied.
 *
 * <pre>{@code
 * try (StoreUnit unit = store.beginUnit("orders", grant, Duration.ofSeconds(10))) {
 *     unit.put("order-17", "paid");
 *     unit.delete("cart-17");
 *     unit.commit();
 * }   // closing an uncommitted unit aborts it
 * }</pre>
 *
 * Not for concurrent use by several threads.
 */
public interface StoreUnit extends AutoCloseable {

    /** Returns the unit's id, as the store named it. */
    String id();

    /** Returns the scope the unit writes to. */
    String scope();

    /** Buffers a put in the unit on the store; nothing is visible before the commit. */
    void put(byte[] key, byte[] value);

    /** Buffers a put of a UTF-8 {@code value} at a UTF-8 {@code key}. */
    default void put(String key, String value) {
        put(key.getBytes(StandardCharsets.UTF_8), value.getBytes(StandardCharsets.UTF_8));
    }

    /** Buffers a delete in the unit on the store. */
    void delete(byte[] key);

    /** Buffers a delete of a UTF-8 {@code key}. */
    default void delete(String key) {
        delete(key.getBytes(StandardCharsets.UTF_8));
    }

    /**
     * Applies every buffered op in one fsync'd batch.
     *
     * @throws StaleWriteException when a higher token preempted the unit; nothing of it was applied
     * @throws io.fencer.core.LimitExceededException ({@code unitTimeout}) when the unit passed its timeout and was
     *     aborted; nothing of it was applied
     * @throws IllegalStateException when the unit was already committed or aborted
     */
    WriteReceipt commit();

    /** Discards the unit; aborting an ended unit is not an error. */
    void abort();

    /** Aborts the unit unless it was committed. */
    @Override
    void close();
}
