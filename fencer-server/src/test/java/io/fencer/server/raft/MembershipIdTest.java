package io.fencer.server.raft;

import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.core.InvalidArgumentException;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * A membership call's peer id passes the one rule of peer ids ({@code ServerConfig.Peer.checkId}): an id that would
 * name a directory's parent or itself in a path, or carries controls into the logs, is refused naming it.
 */
class MembershipIdTest {
    @Test
    void checkId_dotOrDotDotOrControl_isRefusedNamingTheId() {
        for (String odd : List.of(".", "..", "n\u00011", "", "a b")) {
            String shown = odd.replace("\u0001", "\\u0001");
            assertThatThrownBy(() -> Membership.checkId(odd)).as("'%s'", shown)
                    .isInstanceOf(InvalidArgumentException.class)
                    .hasMessageContaining("'" + shown + "'")
                    .satisfies(e -> org.assertj.core.api.Assertions.assertThat(
                            ((InvalidArgumentException) e).field()).isEqualTo("id"));
        }
    }

    @Test
    void checkId_idsOfTheDocsAndTests_areAccepted() {
        for (String id : List.of("n1", "n4", "r1", "m3-n2", "a.b_c-d", "...", "n".repeat(64))) {
            assertThatCode(() -> Membership.checkId(id)).as(id).doesNotThrowAnyException();
        }
    }
}
