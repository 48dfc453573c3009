package io.fencer.store;

import io.fencer.core.UnavailableException;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import org.rocksdb.ColumnFamilyDescriptor;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.ColumnFamilyOptions;
import org.rocksdb.DBOptions;
import org.rocksdb.FlushOptions;
import org.rocksdb.ReadOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.Snapshot;
import org.rocksdb.Statistics;
import org.rocksdb.WriteBatch;
import org.rocksdb.WriteOptions;

/**
 * The store's RocksDB database: its column families {@code data}, {@code fence} and {@code idem} (described in
 * {@code StoreCodec}), the options of its synced and unsynced writes, and the lifecycle lock that keeps every use
 * of the native handles before {@link #close}.
 *
 * <p>Every operation that touches RocksDB runs between {@link #enter()} and {@link #exit()}, which read-hold the
 * lifecycle lock; {@link #close} write-holds it, so no handle is used after it is freed.
 */
final class StoreDatabase {
    private static final byte[] DATA_FAMILY = "data".getBytes(StandardCharsets.UTF_8);
    private static final byte[] FENCE_FAMILY = "fence".getBytes(StandardCharsets.UTF_8);
    private static final byte[] IDEMPOTENCY_FAMILY = "idem".getBytes(StandardCharsets.UTF_8);
    /**
     * Write-ahead log files kept for reuse once obsolete. A reused file already has its blocks, so the sync of a
     * write overwrites them and need not also journal a longer file; a new file grows with every write and each
     * {@code fdatasync} pays for the new size too (raw, on this project's test machines: 135-150 us to sync into
     * allocated blocks, 190-200 us when the file grows). RocksDB marks reused records with the file's number,
     * so recovery stops at the first record of the file's earlier life, as it stops at a torn tail.
     */
    static final int RECYCLED_WAL_FILES = 4;
    /**
     * Memtable size of every family. Small on purpose: the fence family holds one record per scope, rewritten
     * by every write, so its memtable is all superseded versions, and a data record guarded by a lock is
     * typically rewritten too; a small memtable stays in the CPU's cache (RocksDB's default, 64 MiB, made the
     * skip-list insert a quarter of the committer's CPU) and is flushed often, which frees write-ahead log files
     * for reuse sooner.
     */
    static final long MEMTABLE_BYTES = 4L << 20;
    /**
     * The families whose records are rewritten (a scope's fence record by every write, a data record by every
     * write under its lock) insert each new version where the last version of the same key went, instead of
     * searching the memtable's skip list from its top: RocksDB keeps a hint per key prefix of up to this many
     * bytes (a prefix shared by two keys only makes the hint less exact). Each hint costs about 250 bytes of the
     * memtable's arena, counted in its size, so a family of keys written once each would flush sooner: the
     * idempotency family, whose keys are unique, keeps the plain search. With 64 writers the skip-list search
     * was about a sixth of the store's CPU.
     */
    static final int INSERT_HINT_PREFIX_BYTES = 64;

    /** A read of a scope's fence record and one data record from one snapshot; either may be null. */
    record SnapshotRead(byte[] fence, byte[] data) {}

    private final Path directory;
    private final DBOptions databaseOptions;
    private final List<ColumnFamilyOptions> familyOptions;
    private final List<ColumnFamilyHandle> handles;
    private final RocksDB db;
    private final ColumnFamilyHandle dataFamily;
    private final ColumnFamilyHandle fenceFamily;
    private final ColumnFamilyHandle idempotencyFamily;
    private final SyncedWrites syncedWrites;
    private final WriteOptions syncWrite = new WriteOptions().setSync(true);
    /**
     * For idempotency evictions (losing one in a crash only resurrects a valid first result) and an import's scopes,
     * whose one log sync follows the last of them.
     */
    private final WriteOptions unsyncedWrite = new WriteOptions().setSync(false);
    /** Read-held by every operation that touches RocksDB, write-held by close: no use after free. */
    private final ReentrantReadWriteLock lifecycle = new ReentrantReadWriteLock();
    /** Guarded by {@link #lifecycle}. */
    private boolean closed;

    private StoreDatabase(Path directory, DBOptions databaseOptions, List<ColumnFamilyOptions> familyOptions,
            RocksDB db, List<ColumnFamilyHandle> handles, SyncedWrites syncedWrites) {
        this.directory = directory;
        this.databaseOptions = databaseOptions;
        this.familyOptions = familyOptions;
        this.db = db;
        this.handles = handles;
        this.dataFamily = handles.get(1);
        this.fenceFamily = handles.get(2);
        this.idempotencyFamily = handles.get(3);
        this.syncedWrites = syncedWrites;
    }

    /**
     * Opens (or creates) the database in {@code directory} with its column families.
     *
     * @param statistics null in production; a test passes RocksDB statistics to count what RocksDB did (the WAL
     *     syncs of the synced writes). Statistics cost every operation of the database counter updates and
     *     timers, so the store keeps them off rather than pay that on every write for tests alone.
     * @throws UnavailableException when the directory cannot be created or RocksDB cannot open it
     */
    static StoreDatabase open(Path directory, SyncedWrites syncedWrites, Statistics statistics) {
        RocksLibrary.load();
        try {
            Files.createDirectories(directory);
        } catch (IOException e) {
            throw new UnavailableException("cannot create the store directory " + directory + ": " + e, e);
        }
        ColumnFamilyOptions rewritten = rewrittenFamilyOptions(); // first: the only native object made that may throw
        // Writes to different scopes meet in RocksDB's own group commit. Its concurrent memtable inserts pay off
        // for large batches on many cores; for the engine's small batches each RocksDB group then pays a second
        // round of wake-ups (measured in process, 64 writers on 64 scopes, 2 cores: ~40 instead of ~57 us of CPU
        // per write), so the group's leader inserts every batch itself.
        DBOptions databaseOptions = new DBOptions().setCreateIfMissing(true).setCreateMissingColumnFamilies(true)
                .setKeepLogFileNum(4).setAllowConcurrentMemtableWrite(false).setRecycleLogFileNum(RECYCLED_WAL_FILES);
        if (statistics != null) {
            databaseOptions.setStatistics(statistics);
        }
        ColumnFamilyOptions plain = new ColumnFamilyOptions().setWriteBufferSize(MEMTABLE_BYTES);
        List<ColumnFamilyOptions> familyOptions = List.of(plain, rewritten);
        List<ColumnFamilyDescriptor> descriptors = List.of(
                new ColumnFamilyDescriptor(RocksDB.DEFAULT_COLUMN_FAMILY, plain),
                new ColumnFamilyDescriptor(DATA_FAMILY, rewritten),
                new ColumnFamilyDescriptor(FENCE_FAMILY, rewritten),
                new ColumnFamilyDescriptor(IDEMPOTENCY_FAMILY, plain));
        List<ColumnFamilyHandle> handles = new ArrayList<>();
        RocksDB db;
        try {
            db = RocksDB.open(databaseOptions, directory.toString(), descriptors, handles);
        } catch (RocksDBException e) {
            familyOptions.forEach(ColumnFamilyOptions::close);
            databaseOptions.close();
            throw new UnavailableException("cannot open the store at " + directory + ": " + e.getMessage(), e);
        }
        return new StoreDatabase(directory, databaseOptions, familyOptions, db, handles, syncedWrites);
    }

    /**
     * The options of the families whose records are rewritten: the memtable's size, and its insert hint, which
     * RocksJava sets only from an options string.
     */
    private static ColumnFamilyOptions rewrittenFamilyOptions() {
        Properties properties = new Properties();
        properties.setProperty("write_buffer_size", Long.toString(MEMTABLE_BYTES));
        properties.setProperty("memtable_insert_with_hint_prefix_extractor",
                "rocksdb.CappedPrefix." + INSERT_HINT_PREFIX_BYTES);
        ColumnFamilyOptions options = ColumnFamilyOptions.getColumnFamilyOptionsFromProps(properties);
        if (options == null) {
            throw new IllegalStateException("RocksDB refused the store's column family options " + properties);
        }
        return options;
    }

    Path directory() {
        return directory;
    }

    ColumnFamilyHandle dataFamily() {
        return dataFamily;
    }

    ColumnFamilyHandle fenceFamily() {
        return fenceFamily;
    }

    ColumnFamilyHandle idempotencyFamily() {
        return idempotencyFamily;
    }

    /** Read-holds the lifecycle lock for an operation that touches RocksDB; pair with {@link #exit()}. */
    void enter() {
        lifecycle.readLock().lock();
        if (closed) {
            lifecycle.readLock().unlock();
            throw new UnavailableException("the store at " + directory + " is closed");
        }
    }

    void exit() {
        lifecycle.readLock().unlock();
    }

    /** Writes {@code batch} synced: it is on disk when this returns. Call between enter and exit. */
    void writeSynced(WriteBatch batch) throws RocksDBException {
        syncedWrites.write(db, syncWrite, batch);
    }

    /** Puts one record synced: it is on disk when this returns. Call between enter and exit. */
    void putSynced(ColumnFamilyHandle family, byte[] key, byte[] value) throws RocksDBException {
        syncedWrites.put(db, syncWrite, family, key, value);
    }

    /**
     * Writes {@code batch} as a synced write would, but without waiting for the disk: {@link #syncWal} must follow
     * before anything that relies on it is answered. Call between enter and exit.
     */
    void writeBeforeSync(WriteBatch batch) throws RocksDBException {
        syncedWrites.write(db, unsyncedWrite, batch);
    }

    /** Syncs RocksDB's log: every write made before is on disk when this returns. Call between enter and exit. */
    void syncWal() throws RocksDBException {
        syncedWrites.syncWal(db);
    }

    /** Writes {@code batch} without a sync, for evictions a crash may undo. Call between enter and exit. */
    void writeUnsynced(WriteBatch batch) throws RocksDBException {
        db.write(unsyncedWrite, batch);
    }

    /** Returns an iterator over {@code family}, to be closed by the caller; call between enter and exit, or on open. */
    RocksIterator newIterator(ColumnFamilyHandle family) {
        return db.newIterator(family);
    }

    /** Takes a snapshot of the whole database, to be released by {@link #release}; call between enter and exit. */
    Snapshot snapshot() {
        return db.getSnapshot();
    }

    /** Releases a snapshot of {@link #snapshot}; call between enter and exit, or while closing. */
    void release(Snapshot snapshot) {
        db.releaseSnapshot(snapshot);
    }

    /** Returns an iterator over {@code family} as {@code read} sees it, to be closed by the caller before close. */
    RocksIterator newIterator(ColumnFamilyHandle family, ReadOptions read) {
        return db.newIterator(family, read);
    }

    /** Flushes every column family's memtable to its files, waiting; call between enter and exit. */
    void flush(FlushOptions options) throws RocksDBException {
        db.flush(options, List.of(dataFamily, fenceFamily, idempotencyFamily));
    }

    /** Reads the fence record of {@code scope} and the data record of {@code key} from one snapshot. */
    SnapshotRead readFenceAndData(String scope, byte[] key) {
        Snapshot snapshot = db.getSnapshot();
        try (ReadOptions read = new ReadOptions().setSnapshot(snapshot)) {
            byte[] fence = db.get(fenceFamily, read, StoreCodec.fenceKey(scope));
            byte[] data = db.get(dataFamily, read, StoreCodec.dataKey(scope, key));
            return new SnapshotRead(fence, data);
        } catch (RocksDBException e) {
            throw new UnavailableException("the read of scope '" + scope + "' failed: " + e.getMessage(), e);
        } finally {
            db.releaseSnapshot(snapshot);
        }
    }

    /**
     * Waits for the operations in progress, runs {@code beforeClosing} while none can start, then frees every
     * native handle; later operations throw {@link UnavailableException}. Idempotent: a second close runs nothing.
     */
    void close(Runnable beforeClosing) {
        lifecycle.writeLock().lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            beforeClosing.run();
            for (ColumnFamilyHandle handle : handles) {
                handle.close();
            }
            db.close();
            syncWrite.close();
            unsyncedWrite.close();
            familyOptions.forEach(ColumnFamilyOptions::close);
            databaseOptions.close();
        } finally {
            lifecycle.writeLock().unlock();
        }
    }
}
