package io.fencer.lock;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;

/**
 * The state machine answers {@link GoldenRun}'s fixed command sequences with the very results, events, reads and
 * snapshot bytes it gave before it was split into its parts (the files in {@code src/test/resources/golden}, see the
 * README there). A change of behaviour, or of the snapshot format, that a refactoring must not make fails here; a
 * deliberate one regenerates the files and says why in its commit.
 */
class StateMachineGoldenTest {
    @Test
    void scenario_sameCommandsAsBefore_sameSnapshotBytesAndTranscript() {
        GoldenRun.Output scenario = GoldenRun.scenario();

        assertThat(scenario.transcript()).as("results, events and reads")
                .isEqualTo(new String(resource(GoldenRun.SCENARIO_TRANSCRIPT), StandardCharsets.UTF_8));
        assertThat(scenario.snapshots()).as("snapshot bytes").isEqualTo(resource(GoldenRun.SCENARIO_SNAPSHOTS));
    }

    @Test
    void random_sameSeedAsBefore_sameSnapshotBytesAndTranscript() throws IOException {
        GoldenRun.Output random = GoldenRun.random();

        String expected = new String(resource(GoldenRun.RANDOM_TRANSCRIPT_SHA256), StandardCharsets.UTF_8).strip();
        if (!random.transcriptSha256().equals(expected)) {
            // Only the digest is kept (the transcript is large): leave the transcript for a diff against the old code.
            Files.writeString(Path.of("target", "golden-random-transcript.txt"), random.transcript());
        }
        assertThat(random.transcriptSha256()).as("SHA-256 of the transcript (see target/golden-random-transcript.txt)")
                .isEqualTo(expected);
        assertThat(random.snapshots()).as("snapshot bytes").isEqualTo(resource(GoldenRun.RANDOM_SNAPSHOTS));
    }

    private static byte[] resource(String name) {
        try (InputStream in = StateMachineGoldenTest.class.getResourceAsStream("/golden/" + name)) {
            assertThat(in).as("resource golden/%s", name).isNotNull();
            return in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
