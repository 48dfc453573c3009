package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.zip.ZipEntry;
import java.util.zip.ZipFile;
import org.junit.jupiter.api.Test;

/** What the packaged {@code fencer.jar} carries where two of its inputs hold a class of the same name. */
class FencerJarContentsTest {
    private static final Path JAR = Path.of(System.getProperty("user.dir")).toAbsolutePath().getParent()
            .resolve("fencer-cli/target/fencer.jar");
    private static final String LOG_CHANNEL = "org/apache/ratis/server/raftlog/segmented/BufferedWriteChannel.class";

    @Test
    void fencerJar_raftLogChannel_isFencersReplacementNotRatiss() throws IOException {
        assertThat(JAR).as("the packaged jar (./mvnw -B verify packages it before this module's tests)").exists();
        try (ZipFile jar = new ZipFile(JAR.toFile())) {
            ZipEntry entry = jar.getEntry(LOG_CHANNEL);
            assertThat(entry).as("the Raft log's segment channel").isNotNull();
            byte[] bytes;
            try (InputStream in = jar.getInputStream(entry)) {
                bytes = in.readAllBytes();
            }
            // Only fencer-server's class has this field; Ratis's asks the file system for the size instead.
            assertThat(new String(bytes, StandardCharsets.ISO_8859_1)).contains("knownSizeBytes");
        }
    }
}
