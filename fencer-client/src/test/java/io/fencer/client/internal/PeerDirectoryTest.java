package io.fencer.client.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.function.Function;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A client's endpoints follow the group's list of peers, never dropping the configured ones: the lock client's router
 * and the store client's connection alike.
 */
class PeerDirectoryTest {
    private static final long CALL_TIMEOUT_NANOS = 1_000_000_000L;

    /** One kind of client, made with its configured endpoints, and the most endpoints it keeps. */
    record Kind(String name, Function<List<String>, PeerDirectory.Members> make, int endpointsMax) {
        @Override
        public String toString() {
            return name;
        }
    }

    static Stream<Kind> kinds() {
        return Stream.of(
                new Kind("router", endpoints -> new Router(endpoints, CALL_TIMEOUT_NANOS, RetryBudget.SYSTEM),
                        Router.ENDPOINTS_MAX),
                new Kind("store connection", endpoints -> new StoreConnection(String.join(",", endpoints),
                        CALL_TIMEOUT_NANOS, RetryBudget.SYSTEM), StoreConnection.ENDPOINTS_MAX));
    }

    @ParameterizedTest
    @MethodSource("kinds")
    void learnPeers_aListAfterMembershipChanges_addsNewPeersDropsLearnedOnesAndKeepsConfiguredOnes(Kind kind)
            throws Exception {
        PeerDirectory.Members members = kind.make().apply(List.of("a:1", "b:2", "c:3"));
        try (AutoCloseable closing = (AutoCloseable) members) {
            members.learnPeers(List.of("a:1", "b:2", "c:3", "d:4"));
            members.learnPeers(List.of("d:4", "e:5"));
            members.learnPeers(List.of("e:5", "f:6", "not an address"));

            assertThat(members.endpoints()).containsExactly("a:1", "b:2", "c:3", "e:5", "f:6");
        }
    }

    @ParameterizedTest
    @MethodSource("kinds")
    void learnPeers_beyondTheBound_keepsAtMostEndpointsMax(Kind kind) throws Exception {
        PeerDirectory.Members members = kind.make().apply(List.of("a:1"));
        try (AutoCloseable closing = (AutoCloseable) members) {
            members.learnPeers(IntStream.rangeClosed(1, 200).mapToObj(i -> "h" + i + ":1").toList());

            assertThat(members.endpoints()).hasSize(kind.endpointsMax()).startsWith("a:1");
        }
    }

    @ParameterizedTest
    @MethodSource("kinds")
    void learnPeers_emptyOrUnusableList_changesNothing(Kind kind) throws Exception {
        PeerDirectory.Members members = kind.make().apply(List.of("a:1"));
        try (AutoCloseable closing = (AutoCloseable) members) {
            members.learnPeers(List.of("b:2"));

            members.learnPeers(List.of());
            members.learnPeers(List.of("no port"));

            assertThat(members.endpoints()).containsExactly("a:1", "b:2");
        }
    }

    @Test
    void refreshIntervalOfProperty_unset_isThirtySeconds() {
        assertThat(System.getProperty(PeerDirectory.REFRESH_INTERVAL_PROPERTY)).isNull();
        assertThat(PeerDirectory.refreshIntervalOfProperty()).isEqualTo(PeerDirectory.REFRESH_INTERVAL_DEFAULT);
    }
}
