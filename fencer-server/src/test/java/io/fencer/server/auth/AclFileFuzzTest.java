package io.fencer.server.auth;

import com.code_intelligence.jazzer.junit.FuzzTest;
import com.code_intelligence.jazzer.mutation.annotation.NotNull;
import io.fencer.core.FuzzBudget;
import java.io.StringReader;

/**
 * Fuzzes the ACL file parser with any text: it parses or is refused with {@link AclFileException} naming the line;
 * any other throwable, an allocation sized by the text's claims, or a hang is a finding ({@link FuzzBudget}).
 */
class AclFileFuzzTest {
    @FuzzTest(maxDuration = "10s")
    void parse_anyText_parsesOrRefuses(@NotNull String text) throws Exception {
        FuzzBudget.check(text.length() * 3, () -> {
            try {
                AclFile.parse("fuzz.acl", new StringReader(text));
            } catch (AclFileException refused) {
                // the typed refusal
            }
        });
    }
}
