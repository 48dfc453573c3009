package io.fencer.lock;

import io.fencer.core.FuzzBudget;
import com.code_intelligence.jazzer.junit.FuzzTest;

/**
 * Fuzzes the decoders of the replicated log's entries and of their replies: bytes from disk and from other peers.
 * Each input either decodes or is refused with the one typed error, {@link IllegalArgumentException}; any other
 * throwable, an allocation sized by a claimed length, or a hang is a finding ({@link FuzzBudget}). Without
 * {@code JAZZER_FUZZ} the committed inputs under {@code CommandCodecFuzzTestInputs/<method>/} are replayed
 * (docs/testing.md).
 */
class CommandCodecFuzzTest {
    @FuzzTest(maxDuration = "10s")
    void decodeCommands_anyBytes_decodesOrRefuses(byte[] bytes) throws Exception {
        FuzzBudget.check(bytes.length, () -> {
            try {
                CommandCodec.decodeCommands(bytes);
            } catch (IllegalArgumentException refused) {
                // the typed refusal
            }
        });
    }

    @FuzzTest(maxDuration = "10s")
    void decodeResults_anyBytes_decodesOrRefuses(byte[] bytes) throws Exception {
        FuzzBudget.check(bytes.length, () -> {
            try {
                CommandCodec.decodeResults(bytes);
            } catch (IllegalArgumentException refused) {
                // the typed refusal
            }
        });
    }
}
