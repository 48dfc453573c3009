package io.fencer.server.net;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The ports' bounds: their defaults, their ranges, and the cap kept below the file descriptor limit. */
class PortLimitsTest {
    @Test
    void defaults_areTheDocumentedOnes() {
        PortLimits limits = PortLimits.DEFAULT;

        assertThat(limits.handshakeTimeout()).isEqualTo(Duration.ofSeconds(10));
        assertThat(limits.headerReadTimeout()).isEqualTo(Duration.ofSeconds(5));
        assertThat(limits.bodyReadTimeout()).isEqualTo(Duration.ofSeconds(10));
        assertThat(limits.httpIdleTimeout()).isEqualTo(Duration.ofSeconds(30));
        assertThat(limits.httpConnectionsMax()).isEqualTo(1_024);
        assertThat(limits.httpConnectionsPerAddressMax()).isEqualTo(256);
        assertThat(limits.grpcIdleTimeout()).isEqualTo(Duration.ofMinutes(30));
        assertThat(limits.grpcConnectionsMax()).isEqualTo(4_096);
        assertThat(limits.grpcConnectionsPerAddressMax()).isEqualTo(512);
    }

    @Test
    void constructor_outOfRange_isRefusedNamingTheLimitAndValue() {
        assertThatThrownBy(() -> PortLimits.DEFAULT.withHandshakeTimeout(Duration.ZERO))
                .hasMessageContaining("handshakeTimeout PT0S");
        assertThatThrownBy(() -> PortLimits.DEFAULT.withHttpTimeouts(Duration.ofSeconds(1), Duration.ofDays(2),
                Duration.ofSeconds(1))).hasMessageContaining("bodyReadTimeout PT48H");
        assertThatThrownBy(() -> PortLimits.DEFAULT.withHttpConnections(10, 11))
                .hasMessageContaining("httpConnectionsPerAddressMax 11").hasMessageContaining("httpConnectionsMax 10");
        assertThatThrownBy(() -> PortLimits.DEFAULT.withGrpcConnections(0, 0)).hasMessageContaining(
                "grpcConnectionsMax 0");
    }

    @Test
    void effectiveConnectionsMax_aboveHalfTheDescriptorLimit_isLoweredToIt() {
        assertThat(PortLimits.effectiveConnectionsMax(4_096, 20_000)).isEqualTo(4_096);
        assertThat(PortLimits.effectiveConnectionsMax(4_096, 1_024)).isEqualTo(512);
        assertThat(PortLimits.effectiveConnectionsMax(4_096, -1)).as("unknown limit").isEqualTo(4_096);
        assertThat(PortLimits.effectiveConnectionsMax(4_096, 1)).isEqualTo(1);
    }
}
