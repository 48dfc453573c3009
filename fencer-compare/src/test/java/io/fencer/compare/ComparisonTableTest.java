package io.fencer.compare;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ComparisonTableTest {
    @Test
    void median_oddAndEvenCounts_middleOrMeanOfMiddleTwo() {
        assertThat(ComparisonTable.median(new double[] {3, 1, 2})).isEqualTo(2);
        assertThat(ComparisonTable.median(new double[] {4, 1, 3, 2})).isEqualTo(2.5);
        assertThat(ComparisonTable.median(new double[0])).isNaN();
    }

    @Test
    void markdown_threeRounds_mediansRangesAndTheMedianOfRoundRatios() {
        List<ComparisonTable.Run> runs = List.of(
                run(1, "fencer3", 3_000, 10), run(1, "etcd3", 2_000, 40),
                run(2, "fencer3", 2_000, 12), run(2, "etcd3", 1_000, 50),
                run(3, "fencer3", 4_000, 11), run(3, "etcd3", 1_000, 45));

        String table = ComparisonTable.markdown(runs);

        assertThat(table).contains("| own scopes | Fencer, three peers | 3 | 3,000 | 2,000–4,000 | 11.00 |");
        assertThat(table).contains("| own scopes | etcd 3.4, three members | 3 | 1,000 | 1,000–2,000 | 45.00 |");
        // round ratios 1.5, 2 and 4: their median is 2, where the ratio of the medians would be 3
        assertThat(table).contains("| own scopes | 2.00× | 1.50 / 2.00 / 4.00 |");
        assertThat(table).doesNotContain("one scope");
    }

    @Test
    void read_directory_readsTheScriptsFilesOnly(@TempDir Path directory) throws IOException {
        Files.writeString(directory.resolve("2-one-etcd3.json"), "{\"writers\":64,\"writesPerSecond\":812.5,"
                + "\"writeLatencyMillis\":{\"p50\":70.1,\"p99\":null},\"staleRefusals\":0,\"errors\":1}\n");
        Files.writeString(directory.resolve("notes.json"), "not a summary");

        List<ComparisonTable.Run> runs = ComparisonTable.read(directory);

        assertThat(runs).hasSize(1);
        ComparisonTable.Run run = runs.get(0);
        assertThat(run.round()).isEqualTo(2);
        assertThat(run.workload()).isEqualTo("one");
        assertThat(run.system()).isEqualTo("etcd3");
        assertThat(run.writesPerSecond()).isEqualTo(812.5);
        assertThat(run.p99Millis()).isNaN();
        assertThat(run.errors()).isEqualTo(1);
    }

    @Test
    void read_summaryOfAnotherFormat_isRefusedNamingTheFileAndTheFormat(@TempDir Path directory) throws IOException {
        Path file = directory.resolve("1-own-fencer3.json");
        Files.writeString(file, "{\"format\":2,\"writers\":64,\"writesPerSecond\":812.5,"
                + "\"writeLatencyMillis\":{\"p50\":70.1,\"p99\":80.0},\"staleRefusals\":0,\"errors\":0}\n");

        assertThatThrownBy(() -> ComparisonTable.read(directory)).isInstanceOf(IOException.class)
                .hasMessageContaining(file.toString()).hasMessageContaining("format 2")
                .hasMessageContaining("reads format 1");
    }

    private static ComparisonTable.Run run(int round, String system, double rate, double p50) {
        return new ComparisonTable.Run(round, "own", system, rate, p50, p50 * 3, 0, 0);
    }
}
