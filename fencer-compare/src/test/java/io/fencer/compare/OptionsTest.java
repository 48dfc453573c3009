package io.fencer.compare;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

class OptionsTest {
    private static final String ENDPOINT = "http://127.0.0.1:2379";

    @Test
    void parse_endpointsOnly_takesTheDefaultsOfFencerBenchStore() {
        Options options = Options.parse(new String[] {"--endpoints", ENDPOINT});

        assertThat(options.endpoints()).containsExactly(ENDPOINT);
        assertThat(options.settings()).isEqualTo(new EtcdFencedWrites.Settings(64, 64, 256, Duration.ofSeconds(30),
                Duration.ofSeconds(30)));
        assertThat(options.json()).isFalse();
    }

    @Test
    void parse_everyOption_setsEach() {
        Options options = Options.parse(new String[] {"--endpoints", ENDPOINT + ",http://127.0.0.1:2479",
            "--writers", "8", "--scopes", "1", "--value-bytes", "0", "--warmup", "500ms", "--duration", "2m",
            "--json"});

        assertThat(options.endpoints()).containsExactly(ENDPOINT, "http://127.0.0.1:2479");
        assertThat(options.settings()).isEqualTo(new EtcdFencedWrites.Settings(8, 1, 0, Duration.ofMinutes(2),
                Duration.ofMillis(500)));
        assertThat(options.json()).isTrue();
    }

    @Test
    void parse_noEndpoints_failsNamingTheOption() {
        assertThatThrownBy(() -> Options.parse(new String[] {"--writers", "4"}))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("--endpoints is required");
    }

    @Test
    void parse_badValues_failNamingOptionAndValue() {
        assertThatThrownBy(() -> Options.parse(new String[] {"--endpoints", "127.0.0.1:2379"}))
                .hasMessageContaining("--endpoints").hasMessageContaining("'127.0.0.1:2379'");
        assertThatThrownBy(() -> Options.parse(new String[] {"--endpoints", ENDPOINT, "--writers", "many"}))
                .hasMessageContaining("--writers").hasMessageContaining("'many'");
        assertThatThrownBy(() -> Options.parse(new String[] {"--endpoints", ENDPOINT, "--warmup", "30"}))
                .hasMessageContaining("--warmup").hasMessageContaining("'30'");
        assertThatThrownBy(() -> Options.parse(new String[] {"--endpoints", ENDPOINT, "--duration", "2h"}))
                .hasMessageContaining("--duration");
        assertThatThrownBy(() -> Options.parse(new String[] {"--endpoints", ENDPOINT, "--writers"}))
                .hasMessage("--writers needs a value");
        assertThatThrownBy(() -> Options.parse(new String[] {"--endpoints", ENDPOINT, "--locks", "1"}))
                .hasMessage("unknown option: --locks");
    }

    @Test
    void parse_outsideTheLimits_failsNamingLimitAndValue() {
        assertThatThrownBy(() -> Options.parse(new String[] {"--endpoints", ENDPOINT, "--writers", "4097"}))
                .hasMessage("writers 4097 is outside [1, 4096]");
        assertThatThrownBy(() -> Options.parse(new String[] {"--endpoints", ENDPOINT, "--scopes", "0"}))
                .hasMessage("scopes 0 is outside [1, 10000]");
        assertThatThrownBy(() -> Options.parse(new String[] {"--endpoints", ENDPOINT, "--value-bytes", "-1"}))
                .hasMessage("value bytes -1 is outside [0, 1048576]");
        assertThatThrownBy(() -> Options.parse(new String[] {"--endpoints", ENDPOINT, "--duration", "0s"}))
                .hasMessageContaining("duration must be positive");
        String tooMany = String.join(",", java.util.Collections.nCopies(Options.ENDPOINTS_MAX + 1, ENDPOINT));
        assertThatThrownBy(() -> Options.parse(new String[] {"--endpoints", tooMany}))
                .hasMessage("--endpoints: 17 endpoints, more than 16");
    }

    @Test
    void parse_help_asksForTheUsageOnly() {
        assertThat(Options.parse(new String[] {"--json", "--help"}).help()).isTrue();
        assertThat(Options.parse(new String[] {"--help"}).endpoints()).isEqualTo(List.of());
    }
}
