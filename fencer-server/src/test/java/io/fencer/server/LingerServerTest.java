package io.fencer.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.core.ManualTicker;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The linger switch of a real lock server ({@link ServerConfig#linger()}, {@code fencer server --linger}): it reaches
 * the proposer, whose longest window the admin port shows; zero turns lingering off.
 */
class LingerServerTest {
    @TempDir
    Path dataDir;

    @Test
    void start_withLingerZero_theProposerNeverLingers() throws Exception {
        try (FencerServer server = FencerServer.start(TestServers.singlePeer(dataDir, new ManualTicker())
                .withLinger(Duration.ZERO))) {
            assertThat(TestServers.metric(server, "fencer_proposer_linger_max_seconds")).isZero();
        }
    }

    @Test
    void start_byDefault_theProposerLingersUpToOneMillisecond() throws Exception {
        // The control: the gauge shows the setting, not a constant zero.
        try (FencerServer server = FencerServer.start(TestServers.singlePeer(dataDir,
                new ManualTicker()))) {
            assertThat(TestServers.metric(server, "fencer_proposer_linger_max_seconds")).isEqualTo(0.001);
        }
    }

    @Test
    void withLinger_negativeOrAboveTheMaximum_throwsNamingTheValueAndTheLimit() {
        ServerConfig config = ServerConfig.defaults(dataDir);

        assertThatThrownBy(() -> config.withLinger(Duration.ofMillis(11)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("PT0.011S")
                .hasMessageContaining("PT0.01S");
        assertThatThrownBy(() -> config.withLinger(Duration.ofNanos(-1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("linger PT-0.000000001S");
    }
}
