package io.fencer.files;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.core.FencePolicy;
import io.fencer.core.FencingToken;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LimitExceededException;
import io.fencer.core.LockMode;
import io.fencer.core.ModeMismatchException;
import io.fencer.core.ScopeMismatchException;
import io.fencer.core.StaleTokenException;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class FencedDirectoryTest {
    private static final String FILE = "daily.csv";

    @TempDir
    Path dir;
    private FencedDirectory files;
    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

    @BeforeEach
    void open() throws IOException {
        files = FencedDirectory.builder(dir, "reports").meterRegistry(registry).open();
    }

    /** Returns the refusals counted for scope "reports" with {@code reason}: 0 when none was counted. */
    private double refusals(String reason) {
        Counter counter = registry.find("fencer.adapter.refusals")
                .tags("adapter", "files", "scope", "reports", "reason", reason).counter();
        return counter == null ? 0 : counter.count();
    }

    private static FencingToken token(long value) {
        return new FencingToken("reports", value);
    }

    private static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    private String content() throws IOException {
        return Files.readString(dir.resolve(FILE));
    }

    @Test
    void write_freshDirectory_replacesFileAndRecordsItsWriter() throws IOException {
        files.write(token(3), FILE, bytes("v3"));

        assertThat(content()).isEqualTo("v3");
        assertThat(files.writerOf(FILE)).contains(token(3));
        assertThat(files.accepted()).isEqualTo(3);
        FencedFile read = files.read(FILE).orElseThrow();
        assertThat(read.content()).isEqualTo(bytes("v3"));
        assertThat(read.writer()).isEqualTo(token(3));
        assertThat(files.read("other.csv")).isEmpty();
    }

    @Test
    void write_staleToken_isRefusedAndNothingChanges() throws IOException {
        files.write(token(5), FILE, bytes("v5"));
        byte[] fenceBefore = Files.readAllBytes(dir.resolve(FencedDirectory.FENCE_FILE_NAME));

        assertThatThrownBy(() -> files.write(token(4), FILE, bytes("v4")))
                .isInstanceOfSatisfying(StaleTokenException.class, e -> {
                    assertThat(e.presented()).isEqualTo(4);
                    assertThat(e.accepted()).isEqualTo(5);
                    assertThat(e.scope()).isEqualTo("reports");
                });
        assertThatThrownBy(() -> files.write(token(4), "new.csv", bytes("v4"))).isInstanceOf(StaleTokenException.class);
        assertThatThrownBy(() -> files.write(new FencingToken("other-lock", 9), FILE, bytes("v9")))
                .isInstanceOf(io.fencer.core.ScopeMismatchException.class);

        assertThat(refusals("stale_token")).as("the two stale writes, counted").isEqualTo(2);
        assertThat(refusals("scope_mismatch")).isEqualTo(1);
        assertThat(content()).isEqualTo("v5");
        assertThat(dir.resolve("new.csv")).doesNotExist();
        assertThat(Files.readAllBytes(dir.resolve(FencedDirectory.FENCE_FILE_NAME))).isEqualTo(fenceBefore);
        assertThat(listNames()).containsExactlyInAnyOrder(FILE, FencedDirectory.FENCE_FILE_NAME,
                FencedDirectory.LOCK_FILE_NAME);
    }

    @Test
    void write_sameTokenAgain_isAdmittedUnderAtLeastAndRefusedUnderStrict() throws IOException {
        files.write(token(5), FILE, bytes("a"));
        files.write(token(5), FILE, bytes("b"));
        assertThat(content()).isEqualTo("b");

        FencedDirectory strict = FencedDirectory.builder(dir, "reports").policy(FencePolicy.STRICT).open();
        assertThatThrownBy(() -> strict.write(token(5), FILE, bytes("c"))).isInstanceOf(StaleTokenException.class);
        strict.write(token(6), FILE, bytes("d"));
        assertThat(content()).isEqualTo("d");
    }

    @Test
    void write_tokenOfAnotherLock_isRefusedAndNothingIsWritten() throws IOException {
        assertThatThrownBy(() -> files.write(new FencingToken("invoices", 99), FILE, bytes("x")))
                .isInstanceOfSatisfying(ScopeMismatchException.class, e -> {
                    assertThat(e.scope()).isEqualTo("reports");
                    assertThat(e.tokenLock()).isEqualTo("invoices");
                });
        assertThat(listNames()).containsExactly(FencedDirectory.LOCK_FILE_NAME);
    }

    @Test
    void write_sharedToken_isRefused() {
        assertThatThrownBy(() -> files.write(new FencingToken("reports", 2, LockMode.SHARED), FILE, bytes("x")))
                .isInstanceOf(ModeMismatchException.class);
        assertThat(dir.resolve(FILE)).doesNotExist();
    }

    @ParameterizedTest
    // "lone\uD800surrogate": a regression, the unpaired surrogate was written to the fence as '?'
    @ValueSource(strings = {"", ".", "..", "a/b", "..\\x", ".fencer-fence", ".fencer-lock", "line\nbreak",
        "lone\uD800surrogate"})
    void write_nameThatIsNotAPlainFileName_isRefusedNamingIt(String name) {
        assertThatThrownBy(() -> files.write(token(1), name, bytes("x")))
                .isInstanceOfSatisfying(InvalidArgumentException.class, e -> assertThat(e.field()).isEqualTo("name"))
                .hasMessageContaining("file name");
        assertThat(dir.resolve(FencedDirectory.FENCE_FILE_NAME)).doesNotExist();
    }

    @ParameterizedTest
    // A regression: only the lower-case prefix was refused, and on a case-insensitive volume (macOS, Windows, SMB)
    // these names are the lock file, the fence file and its temporary file: a write renamed content over them.
    @ValueSource(strings = {".FENCER-LOCK", ".Fencer-lock", ".FENCER-FENCE", ".FENCER-FENCE.TMP",
        ".Fencer-tmp.1.00"})
    void write_nameOfAFenceFileInAnotherCase_isRefusedNamingIt(String name) {
        assertThatThrownBy(() -> files.write(token(1), name, bytes("x")))
                .isInstanceOfSatisfying(InvalidArgumentException.class, e -> assertThat(e.field()).isEqualTo("name"))
                .hasMessageContaining("the fence's own files");
        assertThat(dir.resolve(FencedDirectory.FENCE_FILE_NAME)).doesNotExist();
    }

    @Test
    void write_contentWriterThrows_leavesFileAndFenceAsTheyWere() throws IOException {
        files.write(token(1), FILE, bytes("v1"));

        assertThatThrownBy(() -> files.write(token(2), FILE, out -> {
            out.write(bytes("half"));
            throw new IOException("source failed");
        })).hasMessage("source failed");

        assertThat(content()).isEqualTo("v1");
        assertThat(files.accepted()).isEqualTo(1);
        assertThat(listNames()).noneMatch(n -> n.startsWith(FencedDirectory.TEMP_PREFIX));
    }

    @Test
    void write_contentOverLimit_isRefusedNamingTheLimit() throws IOException {
        FencedDirectory small = FencedDirectory.builder(dir, "reports").contentBytesMax(4).open();

        assertThatThrownBy(() -> small.write(token(1), FILE, bytes("12345")))
                .isInstanceOfSatisfying(LimitExceededException.class,
                        e -> assertThat(e.limit()).isEqualTo("contentBytesMax"))
                .hasMessageContaining("4 bytes");
        assertThat(dir.resolve(FILE)).doesNotExist();
        assertThat(small.accepted()).isZero();
    }

    @Test
    void write_moreFilesThanLimit_isRefusedNamingTheLimit() throws IOException {
        FencedDirectory two = FencedDirectory.builder(dir, "reports").filesMax(2).open();
        two.write(token(1), "a", bytes("a"));
        two.write(token(1), "b", bytes("b"));
        two.write(token(2), "a", bytes("a2")); // a known file is no new line

        assertThatThrownBy(() -> two.write(token(2), "c", bytes("c")))
                .isInstanceOfSatisfying(LimitExceededException.class, e -> assertThat(e.limit()).isEqualTo("filesMax"));
        assertThat(dir.resolve("c")).doesNotExist();
    }

    @Test
    void open_afterRestart_keepsTheFence() throws IOException {
        files.write(token(7), FILE, bytes("v7"));

        FencedDirectory reopened = FencedDirectory.open(dir, "reports");

        assertThat(reopened.accepted()).isEqualTo(7);
        assertThatThrownBy(() -> reopened.write(token(6), FILE, bytes("v6"))).isInstanceOf(StaleTokenException.class);
    }

    @Test
    void write_fenceFileWithAFlippedByte_isRefusedAsCorruptAndNothingIsWritten() throws IOException {
        files.write(token(7), FILE, bytes("v7"));
        Path fence = dir.resolve(FencedDirectory.FENCE_FILE_NAME);
        String text = Files.readString(fence);
        Files.writeString(fence, text.replace("accepted 7", "accepted 1")); // an attacker or a bad disk lowers it

        assertThatThrownBy(() -> files.write(token(2), FILE, bytes("v2")))
                .isInstanceOfSatisfying(FenceFileCorruptException.class, e -> assertThat(e.file()).isEqualTo(fence))
                .hasMessageContaining("checksum").hasMessageContaining("nothing was written");
        assertThat(content()).isEqualTo("v7");
        assertThatThrownBy(() -> FencedDirectory.open(dir, "reports")).isInstanceOf(FenceFileCorruptException.class);
    }

    @Test
    void write_fenceFileOfAnotherVersionOrTruncated_isRefusedAsCorrupt() throws IOException {
        files.write(token(7), FILE, bytes("v7"));
        Path fence = dir.resolve(FencedDirectory.FENCE_FILE_NAME);
        String text = Files.readString(fence);

        Files.writeString(fence, text.replace("fencer-files 1", "fencer-files 2"));
        assertThatThrownBy(() -> files.write(token(8), FILE, bytes("v8")))
                .isInstanceOf(FenceFileCorruptException.class).hasMessageContaining("format version '2'");
        Files.writeString(fence, text.substring(0, text.length() / 2));
        assertThatThrownBy(() -> files.write(token(8), FILE, bytes("v8")))
                .isInstanceOf(FenceFileCorruptException.class).hasMessageContaining("checksum line");
        assertThat(content()).isEqualTo("v7");
    }

    @Test
    void open_fenceFileOfAnotherScope_isRefusedNamingBoth() throws IOException {
        files.write(token(1), FILE, bytes("v1"));

        assertThatThrownBy(() -> FencedDirectory.open(dir, "invoices")).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("'reports'").hasMessageContaining("'invoices'");
    }

    @Test
    void write_afterWriterDiedBetweenRenameAndRaise_countsItsTokenAndItsFile() throws IOException {
        // A writer died after its rename, before raising the fence: its pending record is all that says so.
        files.write(token(3), FILE, bytes("v3"));
        Files.writeString(dir.resolve(FILE), "v9");
        writeFence(new FenceState("reports", 3, new FenceState.Pending(FILE, 9, ".fencer-tmp.9.gone"),
                Map.of(FILE, 3L)));

        assertThat(files.writerOf(FILE)).contains(token(9));
        assertThatThrownBy(() -> files.write(token(8), FILE, bytes("v8"))).isInstanceOf(StaleTokenException.class);
        assertThat(content()).isEqualTo("v9");
        assertThat(files.accepted()).isEqualTo(9);
    }

    @Test
    void write_afterWriterDiedBeforeItsRename_keepsTheOldWriterAndRemovesTheTemporaryFile() throws IOException {
        files.write(token(3), FILE, bytes("v3"));
        Files.writeString(dir.resolve(".fencer-tmp.9.left"), "v9");
        writeFence(new FenceState("reports", 3, new FenceState.Pending(FILE, 9, ".fencer-tmp.9.left"),
                Map.of(FILE, 3L)));

        assertThat(files.writerOf(FILE)).contains(token(3));
        assertThat(files.accepted()).as("the pending token is counted all the same").isEqualTo(9);
        assertThatThrownBy(() -> files.write(token(8), FILE, bytes("v8"))).isInstanceOf(StaleTokenException.class);
        assertThat(dir.resolve(".fencer-tmp.9.left")).as("settled by the refused write").doesNotExist();
        files.write(token(10), FILE, bytes("v10"));
        assertThat(files.read(FILE).orElseThrow().writer()).isEqualTo(token(10));
        assertThat(Files.readString(dir.resolve(FencedDirectory.FENCE_FILE_NAME))).doesNotContain("pending");
    }

    @Test
    void write_manyThreadsWithShuffledTokens_neverLowersTheFence() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            List<Future<?>> writes = new ArrayList<>();
            for (int t = 1; t <= 40; t++) {
                long value = (t * 17L) % 41; // every value 1..40 once, out of order
                writes.add(pool.submit(() -> {
                    try {
                        files.write(token(value), FILE, bytes("v" + value));
                    } catch (StaleTokenException e) {
                        assertThat(e.accepted()).isGreaterThan(value);
                    }
                    return null;
                }));
            }
            for (Future<?> write : writes) {
                write.get();
            }
        } finally {
            pool.shutdownNow();
        }
        assertThat(files.accepted()).isEqualTo(40);
        assertThat(content()).isEqualTo("v40");
    }

    private void writeFence(FenceState state) throws IOException {
        Files.write(dir.resolve(FencedDirectory.FENCE_FILE_NAME), state.encode());
    }

    private List<String> listNames() throws IOException {
        try (Stream<Path> list = Files.list(dir)) {
            return list.map(p -> p.getFileName().toString()).toList();
        }
    }
}
