package io.fencer.store;

import static io.fencer.store.StoreTesting.bytes;
import static io.fencer.store.StoreTesting.put;
import static io.fencer.store.StoreTesting.sequencer;
import static io.fencer.store.StoreTesting.text;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.core.FencePolicy;
import io.fencer.core.FencingToken;
import io.fencer.core.StaleTokenException;
import io.fencer.core.UnavailableException;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The store's backup file and restore, on real RocksDB: the round trip, the floor raise, and refused inputs. */
class StoreBackupRestoreTest {
    private static final StoreRestore.FenceFloor NO_FLOOR = scope -> 0;

    @TempDir
    Path dir;
    private StoreEngine store;

    @BeforeEach
    void open() {
        store = StoreEngine.open(dir.resolve("source"), StoreOptions.defaults());
    }

    @AfterEach
    void close() {
        store.close();
    }

    @Test
    void empty_restored_isAValidBackupOfNothingAndTheSameAsAnEmptyStoresBackupButForItsHead() throws IOException {
        Path file = dir.resolve("empty.fencerbk");
        Files.write(file, StoreBackupFile.empty(0));

        StoreBackupFile.Summary summary = StoreBackupFile.verify(file);
        StoreRestore.Result result = StoreRestore.restore(file, dir.resolve("restored"), NO_FLOOR);

        assertThat(summary.scopes()).isEmpty();
        assertThat(summary.dataRecords()).isZero();
        assertThat(result.backup().scopes()).isEmpty();
        try (StoreEngine restored = StoreEngine.open(dir.resolve("restored"), StoreOptions.defaults())) {
            assertThat(restored.get("orders", bytes("total"), null).present()).isFalse();
        }
        byte[] fromAnEmptyStore = Files.readAllBytes(backup(store));
        assertThat(StoreBackupFile.empty(0)).hasSameSizeAs(fromAnEmptyStore);
    }

    @Test
    void restore_ofBackup_holdsEveryScopeKeyAndIdempotencyRecordAsBackedUp() throws IOException {
        store.write("orders", sequencer("orders", 7), put("total", "42"), null);
        store.write("orders", sequencer("orders", 9), List.of(Op.put(bytes("gone"), bytes("x")),
                Op.put(bytes("bin"), new byte[] {0, -1, 2})), "retry-1");
        store.write("orders", sequencer("orders", 9), List.of(Op.delete(bytes("gone"))), null);
        store.createScope("jobs", "leader", FencePolicy.STRICT);
        store.write("jobs", sequencer("leader", 3), put("owner", "a"), null);
        Path file = backup(store);

        StoreBackupFile.Summary summary = StoreBackupFile.verify(file);
        assertThat(summary.scopes()).containsExactly(
                new StoreBackupFile.ScopeFence("jobs", "leader", FencePolicy.STRICT, 3),
                new StoreBackupFile.ScopeFence("orders", "orders", FencePolicy.AT_LEAST, 9));
        assertThat(summary.dataRecords()).isEqualTo(3);
        assertThat(summary.idempotencyRecords()).isEqualTo(1);
        StoreRestore.Result result = StoreRestore.restore(file, dir.resolve("restored"), NO_FLOOR);
        assertThat(result.scopesRaised()).isZero();

        try (StoreEngine restored = StoreEngine.open(dir.resolve("restored"), StoreOptions.defaults())) {
            assertThat(restored.scope("orders")).isEqualTo(store.scope("orders"));
            assertThat(restored.scope("jobs")).isEqualTo(store.scope("jobs"));
            ReadResult total = restored.get("orders", bytes("total"), null);
            assertThat(text(total.value())).isEqualTo("42");
            assertThat(total.writtenBy()).isEqualTo(7);
            assertThat(restored.get("orders", bytes("bin"), null).value()).containsExactly(0, -1, 2);
            assertThat(restored.get("orders", bytes("gone"), null).present()).isFalse();
            assertThat(restored.idempotencyEntries()).isEqualTo(1);
            WriteResult replay = restored.write("orders", sequencer("orders", 9), List.of(
                    Op.put(bytes("gone"), bytes("x")), Op.put(bytes("bin"), new byte[] {0, -1, 2})), "retry-1");
            assertThat(replay.replayed()).as("the retry finds the first result in the restored store").isTrue();
        }
    }

    @Test
    void restore_withGenerationFloor_refusesEveryEarlierTokenAndAdmitsTheNewGeneration() throws IOException {
        store.write("orders", sequencer("orders", 5), put("total", "5"), null);
        Path file = backup(store);
        store.write("orders", sequencer("orders", 6), put("total", "6"), null); // after the backup: unknown to it
        long base = FencingToken.generationBase(1);

        StoreRestore.Result result = StoreRestore.restore(file, dir.resolve("restored"),
                StoreRestore.FenceFloor.generation(1));

        assertThat(result.scopesRaised()).isEqualTo(1);
        try (StoreEngine restored = StoreEngine.open(dir.resolve("restored"), StoreOptions.defaults())) {
            assertThat(restored.accepted("orders")).isEqualTo(base);
            for (long old : new long[] {5, 6, base - 1}) {
                assertThatThrownBy(() -> restored.write("orders", sequencer("orders", old), put("total", "old"),
                        null)).as("token %d", old).isInstanceOf(StaleTokenException.class);
            }
            assertThat(restored.write("orders", sequencer("orders", base + 1), put("total", "new"), null)
                    .accepted()).isEqualTo(base + 1);
            assertThat(text(restored.get("orders", bytes("total"), null).value())).isEqualTo("new");
        }
    }

    @Test
    void restore_withFloorBelowAccepted_keepsTheAcceptedToken() throws IOException {
        store.write("orders", sequencer("orders", 50), put("total", "50"), null);
        store.write("jobs", sequencer("jobs", 10), put("n", "1"), null);

        StoreRestore.Result result = StoreRestore.restore(backup(store), dir.resolve("restored"),
                scope -> scope.scope().equals("orders") ? 40 : 12);

        assertThat(result.scopesRaised()).isEqualTo(1);
        try (StoreEngine restored = StoreEngine.open(dir.resolve("restored"), StoreOptions.defaults())) {
            assertThat(restored.accepted("orders")).as("never lowered").isEqualTo(50);
            assertThat(restored.accepted("jobs")).isEqualTo(12);
            assertThatThrownBy(() -> restored.write("jobs", sequencer("jobs", 11), put("n", "2"), null))
                    .isInstanceOf(StaleTokenException.class);
        }
        assertThat(StoreRestore.raised(50, 40)).isEqualTo(50);
        assertThat(StoreRestore.raised(10, 12)).isEqualTo(12);
    }

    @Test
    void openBackup_thenWrites_copiesTheSnapshotOnly() throws IOException {
        store.write("orders", sequencer("orders", 1), put("a", "1"), null);
        Path file = dir.resolve("store.fbk");
        try (StoreBackup backup = store.openBackup(1234)) {
            store.write("orders", sequencer("orders", 2), put("b", "2"), null);
            store.write("later", sequencer("later", 1), put("c", "3"), null);
            Files.write(file, drain(backup, 7)); // tiny pieces: records span them
        }

        StoreBackupFile.Summary summary = StoreBackupFile.verify(file);

        assertThat(summary.createdAtMillis()).isEqualTo(1234);
        assertThat(summary.scopes()).containsExactly(
                new StoreBackupFile.ScopeFence("orders", "orders", FencePolicy.AT_LEAST, 1));
        assertThat(summary.dataRecords()).isEqualTo(1);
    }

    @Test
    void next_afterTheStoreClosed_failsUnavailable() {
        store.write("orders", sequencer("orders", 1), put("a", "1"), null);
        StoreBackup backup = store.openBackup(0);
        assertThat(backup.next(10)).hasSize(10);
        store.close();

        assertThatThrownBy(() -> backup.next(10)).isInstanceOf(UnavailableException.class);
        backup.close(); // released by the store's close already: nothing to do
    }

    @Test
    void verify_ofFileWithOneByteFlipped_refusedAsDamaged() throws IOException {
        store.write("orders", sequencer("orders", 1), put("a", "1"), null);
        Path file = backup(store);
        byte[] bytes = Files.readAllBytes(file);
        bytes[bytes.length / 2] ^= 0x01;
        Files.write(file, bytes);

        assertThatThrownBy(() -> StoreRestore.restore(file, dir.resolve("restored"), NO_FLOOR))
                .isInstanceOf(StoreBackupFile.StoreBackupFileException.class)
                .hasMessageContaining("is damaged: its SHA-256 checksum does not match");
        assertThat(dir.resolve("restored")).doesNotExist();
        assertThat(dir.resolve("restored.restoring")).doesNotExist();
    }

    @Test
    void verify_ofLockGroupBackup_refusedNamingItsKind() throws IOException {
        Path file = dir.resolve("lock.fbk");
        Files.write(file, withDigest(ByteBuffer.allocate(100).put("FENCERBK".getBytes(StandardCharsets.US_ASCII))
                .putShort((short) 1).put((byte) 1).array()));

        assertThatThrownBy(() -> StoreBackupFile.verify(file))
                .hasMessageContaining("is a lock group's backup (of fencer backup), not a store backup");
    }

    @Test
    void verify_ofForeignOrTruncatedFile_refusedNamingTheProblem() throws IOException {
        Path foreign = Files.writeString(dir.resolve("notes.txt"), "not a backup at all");
        store.write("orders", sequencer("orders", 1), put("a", "1"), null);
        Path truncated = backup(store);
        byte[] bytes = Files.readAllBytes(truncated);
        Files.write(truncated, java.util.Arrays.copyOf(bytes, bytes.length - 5));

        assertThatThrownBy(() -> StoreBackupFile.verify(foreign)).hasMessageContaining("is not a Fencer backup");
        assertThatThrownBy(() -> StoreBackupFile.verify(truncated)).hasMessageContaining("is damaged");
    }

    @Test
    void restore_intoNonEmptyDirectory_refusedAndTheDirectoryUnchanged() throws IOException {
        store.write("orders", sequencer("orders", 1), put("a", "1"), null);
        Path file = backup(store);
        Path target = Files.createDirectories(dir.resolve("restored"));
        Files.writeString(target.resolve("keep.txt"), "mine");

        assertThatThrownBy(() -> StoreRestore.restore(file, target, NO_FLOOR))
                .isInstanceOf(FileAlreadyExistsException.class).hasMessageContaining("the directory is not empty");
        try (Stream<Path> entries = Files.list(target)) {
            assertThat(entries.toList()).containsExactly(target.resolve("keep.txt"));
        }
    }

    @Test
    void restore_intoEmptyDirectory_replacesIt() throws IOException {
        store.write("orders", sequencer("orders", 1), put("a", "1"), null);
        Path target = Files.createDirectories(dir.resolve("restored"));

        StoreRestore.restore(backup(store), target, NO_FLOOR);

        try (StoreEngine restored = StoreEngine.open(target, StoreOptions.defaults())) {
            assertThat(text(restored.get("orders", bytes("a"), null).value())).isEqualTo("1");
        }
    }

    private Path backup(StoreEngine engine) throws IOException {
        Path file = Files.createTempFile(dir, "store", ".fbk");
        try (StoreBackup backup = engine.openBackup(0)) {
            Files.write(file, drain(backup, 1 << 20));
        }
        return file;
    }

    private static byte[] drain(StoreBackup backup, int pieceBytes) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        for (byte[] piece = backup.next(pieceBytes); piece != null; piece = backup.next(pieceBytes)) {
            assertThat(piece.length).isBetween(1, pieceBytes);
            bytes.writeBytes(piece);
        }
        return bytes.toByteArray();
    }

    private static byte[] withDigest(byte[] body) throws IOException {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256").digest(body);
            return ByteBuffer.allocate(body.length + digest.length).put(body).put(digest).array();
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IOException(e);
        }
    }
}
