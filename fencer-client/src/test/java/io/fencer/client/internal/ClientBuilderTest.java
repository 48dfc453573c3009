package io.fencer.client.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class ClientBuilderTest {

    @ParameterizedTest
    @ValueSource(strings = {"localhost", "localhost:", ":7070", "host:0", "host:65536", "host:7o70", "ho st:7070",
            "http://host:7070", "[]:7070", "host:-1"})
    void endpoints_malformed_throwNamingTheEndpoint(String endpoint) {
        assertThatThrownBy(() -> Fencer.newBuilder().endpoints("127.0.0.1:7070", endpoint))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'" + endpoint + "'");
    }

    @ParameterizedTest
    @ValueSource(strings = {"127.0.0.1:7070", "localhost:1", "fencer-1.example.com:65535", "[::1]:7070"})
    void endpoints_wellFormed_areAccepted(String endpoint) {
        try (FencerClient client = Fencer.newBuilder().endpoints(endpoint).build()) {
            assertThat(client.toString()).contains(endpoint);
        }
    }

    @Test
    void build_withoutEndpoints_throws() {
        assertThatThrownBy(() -> Fencer.newBuilder().build()).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("at least one endpoint");
        assertThatThrownBy(() -> Fencer.connect()).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void callTimeout_zeroOrNegative_throws() {
        assertThatThrownBy(() -> Fencer.newBuilder().callTimeout(Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("PT0S");
        assertThatThrownBy(() -> Fencer.newBuilder().callTimeout(Duration.ofSeconds(-1)))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void endpoints_duplicates_areKeptOnce() {
        try (FencerClient client = Fencer.connect("127.0.0.1:7070", "127.0.0.1:7070", "127.0.0.1:7071")) {
            assertThat(((DefaultFencerClient) client).router().endpoints())
                    .containsExactly("127.0.0.1:7070", "127.0.0.1:7071");
        }
    }
}
