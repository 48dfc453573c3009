package io.fencer.server.net;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.channel.ChannelOption;
import org.junit.jupiter.api.Test;

/** What every HTTP port's connections are set up with, and the bounds of a port's settings. */
class HttpPortSettingsTest {
    /** Regression: without TCP_NODELAY, each answer waited ~40 ms for the client's delayed ACK (635 vs 2,400/s). */
    @Test
    void childOptions_everyConnection_hasNagleOffAndReadsOnlyWhenAsked() {
        assertThat(HttpPort.childOptions()).containsEntry(ChannelOption.TCP_NODELAY, true)
                .containsEntry(ChannelOption.AUTO_READ, false);
    }

    @Test
    void settings_bodiesBelowOneBody_areRefused() {
        assertThatThrownBy(() -> new HttpPort.Settings("x", 1_024, 1_000, 0, 1))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("bodies 1000");
    }

    @Test
    void path_ofTargets_isDecodedWithoutQueryAndTheTargetWhenNoUri() {
        assertThat(HttpCall.path("/fencer.v1.Locks/Acquire?x=1")).isEqualTo("/fencer.v1.Locks/Acquire");
        assertThat(HttpCall.path("/heal%74hz")).isEqualTo("/healthz");
        assertThat(HttpCall.path("/a b")).isEqualTo("/a b");
    }
}
