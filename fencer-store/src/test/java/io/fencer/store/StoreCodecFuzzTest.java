package io.fencer.store;

import io.fencer.core.FuzzBudget;
import com.code_intelligence.jazzer.junit.FuzzTest;
import io.fencer.core.FencerException;

/**
 * Fuzzes the store's record decoders: keys and values read back from RocksDB, which a torn or foreign data directory
 * may hold. Each decodes or is refused with the store's typed error, a {@link FencerException} (the engine reports
 * it as INTERNAL naming the record); any other throwable, an allocation sized by a claimed length, or a hang is a
 * finding ({@link FuzzBudget}).
 */
class StoreCodecFuzzTest {
    @FuzzTest(maxDuration = "10s")
    void decodeData_anyBytes_decodesOrRefuses(byte[] bytes) throws Exception {
        decodes(bytes, () -> StoreCodec.decodeData(bytes));
    }

    @FuzzTest(maxDuration = "10s")
    void decodeFence_anyBytes_decodesOrRefuses(byte[] bytes) throws Exception {
        decodes(bytes, () -> StoreCodec.decodeFence(bytes));
    }

    @FuzzTest(maxDuration = "10s")
    void decodeIdempotency_anyBytes_decodesOrRefuses(byte[] bytes) throws Exception {
        decodes(bytes, () -> StoreCodec.decodeIdempotency(bytes));
    }

    @FuzzTest(maxDuration = "10s")
    void keys_anyBytes_decodeOrRefuse(byte[] bytes) throws Exception {
        decodes(bytes, () -> StoreCodec.splitIdempotencyKey(bytes));
        decodes(bytes, () -> StoreCodec.scopeOfFenceKey(bytes));
    }

    private static void decodes(byte[] bytes, Runnable decode) throws Exception {
        FuzzBudget.check(bytes.length, () -> {
            try {
                decode.run();
            } catch (FencerException refused) {
                // the typed refusal
            }
        });
    }
}
