package io.fencer.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.core.ManualTicker;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The linger switch of a real lock server ({@link ServerConfig#linger()}, {@code fencer server --linger}): it reaches
 * the proposer, whose longest window the admin port shows; zero turns lingering off.
 */
class LingerServerTest {
    @TempDir
    Path dataDir;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    @Test
    void start_withLingerZero_theProposerNeverLingers() throws Exception {
        try (FencerServer server = FencerServer.start(TestServers.singlePeer(dataDir, new ManualTicker())
                .withLinger(Duration.ZERO))) {
            assertThat(metric(server, "fencer_proposer_linger_max_seconds")).isZero();
        }
    }

    @Test
    void start_byDefault_theProposerLingersUpToOneMillisecond() throws Exception {
        // The control: the gauge shows the setting, not a constant zero.
        try (FencerServer server = FencerServer.start(TestServers.singlePeer(dataDir,
                new ManualTicker()))) {
            assertThat(metric(server, "fencer_proposer_linger_max_seconds")).isEqualTo(0.001);
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

    /** Returns the value of the Prometheus line of {@code series} on the admin port. */
    private double metric(FencerServer server, String series) throws Exception {
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.adminPort()
                + "/metrics")).timeout(Duration.ofSeconds(20)).GET().build();
        String body = http.send(request, HttpResponse.BodyHandlers.ofString()).body();
        Matcher matcher = Pattern.compile("(?m)^" + Pattern.quote(series) + " (\\S+)$").matcher(body);
        if (!matcher.find()) {
            throw new AssertionError("no " + series + " on /metrics:\n" + body);
        }
        return Double.parseDouble(matcher.group(1));
    }
}
