package io.fencer.core;

import com.code_intelligence.jazzer.junit.FuzzTest;
import com.code_intelligence.jazzer.mutation.annotation.NotNull;
import java.nio.charset.StandardCharsets;

/**
 * Fuzzes the sequencer parser: text a client hands a resource. Each input parses or is refused with
 * {@link InvalidArgumentException} (or, when keys are required, {@link BadTokenSignatureException}); any other
 * throwable, an allocation sized by the input's claims, or a hang is a finding ({@link FuzzBudget}). A sequencer
 * that parses formats back to itself, so no two texts name one token.
 */
class SequencerFuzzTest {
    private static final TokenKeys KEYS = TokenKeys.of("k1", "0123456789abcdef0123456789abcdef"
            .getBytes(StandardCharsets.US_ASCII));

    @FuzzTest(maxDuration = "10s")
    void parse_anyText_parsesOrRefuses(@NotNull String text) throws Exception {
        FuzzBudget.check(text.length() * 3, () -> {
            try {
                FencingToken token = Sequencer.parse(text);
                if (!Sequencer.parse(Sequencer.format(token)).equals(token)) {
                    throw new AssertionError("'" + text + "' parsed to " + token + ", which formats to another");
                }
            } catch (InvalidArgumentException refused) {
                // the typed refusal
            }
            try {
                Sequencer.parse(text, KEYS);
            } catch (InvalidArgumentException | BadTokenSignatureException refused) {
                // the typed refusals
            }
        });
    }
}
