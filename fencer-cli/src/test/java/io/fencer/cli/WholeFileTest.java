package io.fencer.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The backup commands' file writing: whole or not at all, each run in a temporary file of its own. */
class WholeFileTest {
    @TempDir
    Path directory;

    @Test
    void write_checkFails_leavesNoTemporaryFileAndTheTargetAsItWas() throws Exception {
        Path target = directory.resolve("backup.fbk");
        Files.writeString(target, "yesterday");

        assertThatThrownBy(() -> WholeFile.write(target, channel -> WholeFile.writeAll(channel, bytes("torn")),
                written -> {
                    throw new IOException("checksum mismatch");
                })).hasMessage("checksum mismatch");

        assertThat(listed()).containsExactly(target);
        assertThat(Files.readString(target)).isEqualTo("yesterday");
    }

    /**
     * A backup holds a store's values or session secrets' hashes: neither the umask nor the file it replaces may open
     * it to others.
     */
    @Test
    void write_overAFileOthersRead_keepsAFileOnlyItsOwnerReads() throws Exception {
        Path target = directory.resolve("backup.fbk");
        Files.writeString(target, "yesterday");
        Files.setPosixFilePermissions(target, PosixFilePermissions.fromString("rw-rw-rw-"));

        WholeFile.write(target, channel -> WholeFile.writeAll(channel, bytes("today")), written -> null);

        assertThat(Files.readString(target)).isEqualTo("today");
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(target))).isEqualTo("rw-------");
    }

    // Regression: two runs to the same FILE shared FILE.tmp, so one could truncate or rename the other's bytes.
    @Test
    void write_twoOverlappingRunsToOneTarget_eachWritesItsOwnFileAndTheTargetIsOneOfThemWhole() throws Exception {
        Path target = directory.resolve("backup.fbk");
        String first = "first".repeat(10_000);
        String second = "second".repeat(10_000);
        CountDownLatch firstStarted = new CountDownLatch(1);
        CountDownLatch secondDone = new CountDownLatch(1);
        CompletableFuture<Object> firstRun = CompletableFuture.supplyAsync(() -> {
            try {
                return WholeFile.write(target, channel -> {
                    WholeFile.writeAll(channel, bytes(first.substring(0, 100)));
                    firstStarted.countDown();
                    await(secondDone);
                    WholeFile.writeAll(channel, bytes(first.substring(100)));
                }, written -> Files.readString(written));
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        });
        await(firstStarted);

        String secondWritten = WholeFile.write(target, channel -> WholeFile.writeAll(channel, bytes(second)),
                written -> Files.readString(written));
        String secondKept = Files.readString(target);
        secondDone.countDown();
        Object firstWritten = firstRun.get(30, TimeUnit.SECONDS);

        assertThat(secondWritten).isEqualTo(second);
        assertThat(secondKept).isEqualTo(second);
        assertThat(firstWritten).isEqualTo(first);
        assertThat(Files.readString(target)).as("the later rename, whole").isEqualTo(first);
        assertThat(listed()).containsExactly(target);
    }

    private java.util.List<Path> listed() throws IOException {
        try (Stream<Path> files = Files.list(directory)) {
            return files.toList();
        }
    }

    private static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    private static void await(CountDownLatch latch) {
        try {
            assertThat(latch.await(30, TimeUnit.SECONDS)).isTrue();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
