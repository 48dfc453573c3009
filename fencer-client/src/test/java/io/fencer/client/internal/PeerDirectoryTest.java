package io.fencer.client.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The router's endpoints follow the group's list of peers, never dropping the configured ones. */
class PeerDirectoryTest {

    @Test
    void learnPeers_aListAfterMembershipChanges_addsNewPeersDropsLearnedOnesAndKeepsConfiguredOnes() {
        try (Router router = new Router(List.of("a:1", "b:2", "c:3"), 1_000_000_000L, RetryBudget.SYSTEM)) {
            router.learnPeers(List.of("a:1", "b:2", "c:3", "d:4"));
            router.learnPeers(List.of("d:4", "e:5"));
            router.learnPeers(List.of("e:5", "f:6", "not an address"));

            assertThat(router.endpoints()).containsExactly("a:1", "b:2", "c:3", "e:5", "f:6");
        }
    }

    @Test
    void learnPeers_beyondTheBound_keepsAtMostEndpointsMax() {
        try (Router router = new Router(List.of("a:1"), 1_000_000_000L, RetryBudget.SYSTEM)) {
            List<String> many = java.util.stream.IntStream.rangeClosed(1, 200).mapToObj(i -> "h" + i + ":1").toList();

            router.learnPeers(many);

            assertThat(router.endpoints()).hasSize(Router.ENDPOINTS_MAX).startsWith("a:1");
        }
    }

    @Test
    void refreshIntervalOfProperty_unset_isThirtySeconds() {
        assertThat(System.getProperty(PeerDirectory.REFRESH_INTERVAL_PROPERTY)).isNull();
        assertThat(PeerDirectory.refreshIntervalOfProperty()).isEqualTo(PeerDirectory.REFRESH_INTERVAL_DEFAULT);
    }
}
