package io.fencer.compare;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

class SummaryTest {
    private static final EtcdFencedWrites.Settings SETTINGS = new EtcdFencedWrites.Settings(64, 1, 256,
            Duration.ofSeconds(4), Duration.ofSeconds(3));

    @Test
    void json_result_hasTheFieldsOfFencerBenchStoreInItsOrder() throws IOException {
        EtcdFencedWrites.Result result = new EtcdFencedWrites.Result(SETTINGS, 4_000, 0, null, 2, "Timeout: x",
                1.25, 9.5, 20.0, 31.0);

        JsonObject json = JsonParser.parseString(Summary.json(result)).getAsJsonObject();

        assertThat(names(json)).containsExactlyElementsOf(fencerBenchStoreNames());
        assertThat(json.get("writesPerSecond").getAsDouble()).isEqualTo(1_000.0);
        assertThat(json.get("scopes").getAsInt()).isEqualTo(1);
        assertThat(json.get("durationMillis").getAsLong()).isEqualTo(4_000);
        assertThat(json.getAsJsonObject("writeLatencyMillis").get("p99").getAsDouble()).isEqualTo(9.5);
        assertThat(json.get("firstStale").isJsonNull()).isTrue();
        assertThat(json.get("firstError").getAsString()).isEqualTo("Timeout: x");
    }

    @Test
    void json_result_startsWithTheFormatVersionOfFencersJson() throws IOException {
        EtcdFencedWrites.Result result = new EtcdFencedWrites.Result(SETTINGS, 4_000, 0, null, 0, null,
                1.25, 9.5, 20.0, 31.0);

        JsonObject json = JsonParser.parseString(Summary.json(result)).getAsJsonObject();

        assertThat(json.keySet().iterator().next()).as(json.toString()).isEqualTo("format");
        assertThat(json.get("format").getAsInt()).isEqualTo(fencerJsonFormat());
    }

    @Test
    void json_noWrites_writesNullLatencies() {
        EtcdFencedWrites.Result result = new EtcdFencedWrites.Result(SETTINGS, 0, 3, "scope s: token 5 refused", 0,
                null, Double.NaN, Double.NaN, Double.NaN, Double.NaN);

        JsonObject json = JsonParser.parseString(Summary.json(result)).getAsJsonObject();

        assertThat(json.getAsJsonObject("writeLatencyMillis").get("p50").isJsonNull()).isTrue();
        assertThat(json.get("staleRefusals").getAsLong()).isEqualTo(3);
        assertThat(Summary.text(result)).contains("stale refusals:      3 (first: scope s: token 5 refused)");
    }

    /** Every member name, depth first, as the writer orders them. */
    private static List<String> names(JsonObject json) {
        List<String> names = new ArrayList<>();
        for (Map.Entry<String, JsonElement> member : json.entrySet()) {
            names.add(member.getKey());
            if (member.getValue().isJsonObject()) {
                names.addAll(names(member.getValue().getAsJsonObject()));
            }
        }
        return names;
    }

    /** The version every {@code --json} output of {@code fencer} starts with, read from the source of its writer. */
    private static int fencerJsonFormat() throws IOException {
        Path source = Path.of("..", "fencer-cli", "src", "main", "java", "io", "fencer", "cli", "Json.java");
        Matcher format = Pattern.compile("static final int FORMAT = (\\d+);").matcher(Files.readString(source));
        assertThat(format.find()).as("the version in " + source).isTrue();
        return Integer.parseInt(format.group(1));
    }

    /**
     * The names {@code fencer bench store --json} writes, read from its source so that the two cannot drift: the
     * version first, which its writer puts before every top-level object's members.
     */
    private static List<String> fencerBenchStoreNames() throws IOException {
        Path source = Path.of("..", "fencer-cli", "src", "main", "java", "io", "fencer", "cli",
                "BenchStoreCommand.java");
        String text = Files.readString(source);
        String toJson = text.substring(text.indexOf("static Json toJson("));
        List<String> names = new ArrayList<>(List.of("format"));
        Matcher add = Pattern.compile("\\.add\\(\"(\\w+)\"").matcher(toJson);
        while (add.find()) {
            names.add(add.group(1));
        }
        assertThat(names).as("names read from " + source).contains("writesPerSecond", "p99", "staleRefusals");
        return names;
    }
}
