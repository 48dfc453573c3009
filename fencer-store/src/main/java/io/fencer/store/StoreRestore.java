package io.fencer.store;

import io.fencer.core.FencingToken;
import io.fencer.core.UnavailableException;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Comparator;
import java.util.Objects;
import java.util.stream.Stream;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.FlushOptions;
import org.rocksdb.RocksDBException;
import org.rocksdb.WriteBatch;

/**
 * Restores a store's data directory from a {@link StoreBackupFile}, raising every scope's accepted token to a fence
 * floor on the way: the one rule that keeps a restored store from accepting an old token.
 *
 * <p>Why a floor, always: the backup knows the tokens the store had accepted when it was taken, not those it accepted
 * afterwards, before it was lost. A store restored as it was would accept again every token between the two, the
 * tokens of holders superseded since. So a restore needs a floor from the lock service, the one party that knows
 * every grant: {@link FenceFloor#generation} when the lock group was itself restored into a new generation (its new
 * tokens exceed that base, every older token is below it), or the latest grant of each scope's lock read from the
 * live group ({@code fencer store restore --fence-from}). Each scope's accepted token becomes the larger of its own
 * and its floor; never lower.
 *
 * <p>Whole or nothing: the file is checked whole before anything is written, the target must be absent or an empty
 * directory, and the database is built in a sibling directory ({@code DIR.restoring}) that is renamed into place only
 * when complete and synced; a failure on the way deletes it.
 */
public final class StoreRestore {
    /** How many bytes of records go into one RocksDB batch while restoring. */
    static final int BATCH_BYTES_MAX = 4 << 20;

    /** Gives each scope of a backup its floor: the least token it may accept once restored. */
    @FunctionalInterface
    public interface FenceFloor {
        /** Returns the floor of {@code scope}: its accepted token is raised to it when below. */
        long floor(StoreBackupFile.ScopeFence scope);

        /** The floor of a lock group restored into {@code generation}: {@code generation × 2^48}, for every scope. */
        static FenceFloor generation(int generation) {
            long base = FencingToken.generationBase(generation);
            return scope -> base;
        }
    }

    /** What a restore did: the file's summary, and how many scopes' accepted tokens it raised. */
    public record Result(StoreBackupFile.Summary backup, long scopesRaised) {}

    private StoreRestore() {}

    /** Returns the accepted token a restored scope keeps: the larger of the backed-up one and the floor. */
    public static long raised(long accepted, long floor) {
        return Math.max(accepted, floor);
    }

    /**
     * Checks that {@code directory} may be restored into: absent, or an empty directory.
     *
     * @throws IOException naming the directory and what is in the way
     */
    public static void checkTarget(Path directory) throws IOException {
        if (!Files.exists(directory, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        if (!Files.isDirectory(directory, LinkOption.NOFOLLOW_LINKS)) {
            throw new FileAlreadyExistsException(directory.toString(), null, "it is not a directory; a store is"
                    + " restored into an empty directory or one that does not exist yet");
        }
        try (Stream<Path> entries = Files.list(directory)) {
            if (entries.findAny().isPresent()) {
                throw new FileAlreadyExistsException(directory.toString(), null, "the directory is not empty; a"
                        + " store is restored only into an empty one (move the old data away first)");
            }
        }
    }

    /**
     * Restores the backup in {@code file} into {@code directory}, raising each scope's accepted token to its floor.
     * Checks the target and the file whole ({@link StoreBackupFile#verify}) before anything is written.
     *
     * @throws StoreBackupFile.StoreBackupFileException when the file is damaged or not a store backup; nothing is
     *     written then
     * @throws IOException when the target is not empty, or writing fails (then nothing is left behind)
     */
    public static Result restore(Path file, Path directory, FenceFloor floor) throws IOException {
        Objects.requireNonNull(floor, "floor");
        checkTarget(directory);
        StoreBackupFile.verify(file);
        Path absolute = directory.toAbsolutePath().normalize();
        Path building = building(directory);
        if (Files.exists(building, LinkOption.NOFOLLOW_LINKS)) {
            throw new FileAlreadyExistsException(building.toString(), null, "an earlier restore was interrupted"
                    + " and left it; delete it and restore again");
        }
        boolean moved = false;
        try {
            Result result = build(file, building, floor);
            checkTarget(directory); // still empty: nothing appeared while the database was built
            Files.move(building, absolute, StandardCopyOption.ATOMIC_MOVE); // rename(2) replaces an empty directory
            moved = true;
            syncDirectory(absolute.getParent());
            return result;
        } finally {
            if (!moved) {
                deleteTree(building);
            }
        }
    }

    /**
     * Returns where a restore into {@code directory} builds the database before renaming it into place:
     * {@code DIR.restoring} beside it. A restore cut short by a crash leaves it behind.
     */
    public static Path building(Path directory) {
        Path absolute = directory.toAbsolutePath().normalize();
        return absolute.resolveSibling(absolute.getFileName() + ".restoring");
    }

    /** Writes every record of the file into a new database in {@code building}, fences raised; syncs and closes. */
    private static Result build(Path file, Path building, FenceFloor floor) throws IOException {
        StoreDatabase database = StoreDatabase.open(building, SyncedWrites.ROCKSDB, null);
        long[] raised = {0};
        try (Batches batches = new Batches(database)) {
            StoreBackupFile.Summary summary = StoreBackupFile.read(file, (tag, key, value) -> {
                byte[] stored = value;
                if (tag == StoreBackupFile.TAG_FENCE) {
                    stored = raise(key, value, floor, raised);
                }
                batches.put(family(database, tag), key, stored);
            });
            batches.flush();
            database.enter();
            try (FlushOptions flush = new FlushOptions().setWaitForFlush(true)) {
                database.flush(flush); // the restored store then opens from its files, not from a log replay
            } finally {
                database.exit();
            }
            return new Result(summary, raised[0]);
        } catch (RocksDBException e) {
            throw new IOException("writing the restored store at " + building + " failed: " + e.getMessage(), e);
        } catch (UnavailableException e) {
            throw new IOException(e.getMessage(), e);
        } finally {
            database.close(() -> { });
        }
    }

    /** Returns the fence record with its accepted token raised to the scope's floor. */
    private static byte[] raise(byte[] key, byte[] value, FenceFloor floor, long[] raised) {
        String scope = StoreCodec.scopeOfFenceKey(key);
        StoreCodec.FenceRecord fence = StoreCodec.decodeFence(value);
        long to = floor.floor(new StoreBackupFile.ScopeFence(scope, fence.lock(), fence.policy(), fence.accepted()));
        long accepted = raised(fence.accepted(), to);
        if (accepted == fence.accepted()) {
            return value;
        }
        raised[0]++;
        return StoreCodec.fenceValue(fence.lock(), fence.policy(), accepted, fence.revision());
    }

    private static ColumnFamilyHandle family(StoreDatabase database, byte tag) {
        return switch (tag) {
            case StoreBackupFile.TAG_FENCE -> database.fenceFamily();
            case StoreBackupFile.TAG_DATA -> database.dataFamily();
            default -> database.idempotencyFamily();
        };
    }

    /**
     * Records gathered into batches of at most {@link #BATCH_BYTES_MAX}, each written as it fills, the last synced.
     * Closing frees the batch being gathered: a restore that fails midway must not leave its native memory behind.
     */
    private static final class Batches implements AutoCloseable {
        private final StoreDatabase database;
        private WriteBatch batch = new WriteBatch();
        private long bytes;

        Batches(StoreDatabase database) {
            this.database = database;
        }

        void put(ColumnFamilyHandle family, byte[] key, byte[] value) throws IOException {
            try {
                batch.put(family, key, value);
                bytes += key.length + value.length;
                if (bytes >= BATCH_BYTES_MAX) {
                    write(false);
                }
            } catch (RocksDBException e) {
                throw new IOException("writing the restored store failed: " + e.getMessage(), e);
            }
        }

        void flush() throws RocksDBException {
            write(true);
        }

        @Override
        public void close() {
            batch.close();
        }

        private void write(boolean synced) throws RocksDBException {
            database.enter();
            try {
                if (synced) {
                    database.writeSynced(batch);
                } else {
                    database.writeUnsynced(batch);
                }
            } finally {
                database.exit();
            }
            batch.close();
            batch = new WriteBatch();
            bytes = 0;
        }
    }

    private static void syncDirectory(Path directory) throws IOException {
        try (FileChannel channel = FileChannel.open(directory, StandardOpenOption.READ)) {
            channel.force(true);
        }
    }

    private static void deleteTree(Path root) throws IOException {
        if (!Files.exists(root, LinkOption.NOFOLLOW_LINKS)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(root)) {
            for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(path);
            }
        }
    }
}
