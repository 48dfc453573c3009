package io.fencer.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.core.FencePolicy;
import io.fencer.core.InternalException;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

/**
 * Regressions the fuzzer ({@link StoreCodecFuzzTest}) found: records and keys too short for what they claim were
 * refused with the buffer's own {@code BufferUnderflowException} or an index error instead of the store's typed
 * error, which the engine reports as a corrupt record naming it.
 */
class StoreCodecTest {
    @Test
    void splitIdempotencyKey_emptyKey_refusedAsCorrupt() {
        assertThatThrownBy(() -> StoreCodec.splitIdempotencyKey(new byte[0]))
                .isInstanceOf(InternalException.class).hasMessageContaining("shorter than its scope length");
    }

    @Test
    void splitIdempotencyKey_scopeLongerThanKey_refusedAsCorrupt() {
        assertThatThrownBy(() -> StoreCodec.splitIdempotencyKey(new byte[] {0, 9, 'a'}))
                .isInstanceOf(InternalException.class).hasMessageContaining("shorter than its scope of 9");
    }

    @Test
    void scopeOfFenceKey_invalidName_refusedAsCorrupt() {
        assertThatThrownBy(() -> StoreCodec.scopeOfFenceKey(new byte[] {(byte) 0xff}))
                .isInstanceOf(InternalException.class).hasMessageContaining("fence record's scope is invalid");
    }

    @Test
    void decodeData_versionOnly_refusedAsCorrupt() {
        assertThatThrownBy(() -> StoreCodec.decodeData(new byte[] {StoreCodec.VERSION}))
                .isInstanceOf(InternalException.class).hasMessageContaining("bytes left for its token");
    }

    @Test
    void decodeFence_truncatedLock_refusedAsCorrupt() {
        byte[] whole = StoreCodec.fenceValue("orders", FencePolicy.AT_LEAST, 7, 3);
        assertThat(StoreCodec.decodeFence(whole).lock()).isEqualTo("orders"); // control: the whole record reads
        assertThatThrownBy(() -> StoreCodec.decodeFence(Arrays.copyOf(whole, whole.length - 1)))
                .isInstanceOf(InternalException.class).hasMessageContaining("bytes left for its lock name");
        assertThatThrownBy(() -> StoreCodec.decodeFence(Arrays.copyOf(whole, 5)))
                .isInstanceOf(InternalException.class).hasMessageContaining("bytes left for its policy");
    }

    @Test
    void decodeIdempotency_truncated_refusedAsCorrupt() {
        assertThatThrownBy(() -> StoreCodec.decodeIdempotency(new byte[] {StoreCodec.VERSION, 0, 0, 0}))
                .isInstanceOf(InternalException.class).hasMessageContaining("bytes left for its token");
    }
}
