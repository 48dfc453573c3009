package io.fencer.store;

import io.fencer.core.UnavailableException;
import java.util.List;
import java.util.function.Consumer;
import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.ReadOptions;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.Snapshot;

/**
 * A backup of the store being taken: the bytes of a {@link StoreBackupFile}, made piece by piece from one RocksDB
 * snapshot, so the copy is consistent (every synced batch, the data and the fence it raised, is in it whole or not
 * at all) while writes go on. Obtained from {@link StoreEngine#openBackup}.
 *
 * <p>Why a snapshot read record by record, not RocksDB's Checkpoint or BackupEngine: both copy the database's files
 * into a directory on the store's own machine, while the backup must travel over the store's port to the operator's
 * machine, as one checked file; the records read back are the store's own, which the restore decodes and checks one
 * by one (and raises the fences of) without opening a foreign database; and the file does not depend on RocksDB's
 * file format. A snapshot pins the versions it sees until it is released: close a backup when done.
 *
 * <p>Pieces are made on demand ({@link #next}), so a reader that is slow costs neither memory nor a thread. Each
 * piece is read under the database's lifecycle lock; the engine's close releases a backup still open, and a later
 * {@code next} fails {@link UnavailableException}. Not thread-safe: one caller at a time.
 */
public final class StoreBackup implements AutoCloseable {
    private static final byte[] TAGS = {StoreBackupFile.TAG_FENCE, StoreBackupFile.TAG_DATA,
        StoreBackupFile.TAG_IDEMPOTENCY};

    private final StoreDatabase database;
    private final Consumer<StoreBackup> onClose;
    private final List<ColumnFamilyHandle> families;
    private final StoreBackupFile.Writer writer;
    private final long sequence;
    /** Guarded by this; null once released. */
    private Snapshot snapshot;
    private ReadOptions read;
    private RocksIterator iterator;
    private int family;
    private boolean ended;

    /** Takes the snapshot; call between the database's enter and exit. */
    StoreBackup(StoreDatabase database, long createdAtMillis, Consumer<StoreBackup> onClose) {
        this.database = database;
        this.onClose = onClose;
        this.families = List.of(database.fenceFamily(), database.dataFamily(), database.idempotencyFamily());
        this.snapshot = database.snapshot();
        this.sequence = snapshot.getSequenceNumber();
        this.read = new ReadOptions().setSnapshot(snapshot);
        this.writer = new StoreBackupFile.Writer(createdAtMillis, sequence);
    }

    /** Returns the RocksDB sequence number of the snapshot copied. */
    public long sequence() {
        return sequence;
    }

    /**
     * Returns the next at most {@code bytesMax} bytes of the file, or null once every byte was returned.
     *
     * @throws UnavailableException when the store closed, or RocksDB failed to read
     */
    public byte[] next(int bytesMax) {
        if (bytesMax <= 0) {
            throw new IllegalArgumentException("bytesMax must be positive: " + bytesMax);
        }
        database.enter();
        try {
            synchronized (this) {
                if (snapshot == null && !ended) {
                    throw new UnavailableException("the backup of the store at " + database.directory()
                            + " was closed before it ended");
                }
                while (!ended && writer.pendingBytes() < bytesMax) {
                    step();
                }
                return writer.pendingBytes() == 0 ? null : writer.take(bytesMax);
            }
        } finally {
            database.exit();
        }
    }

    /** Writes the next record, or moves to the next family, or ends the file; under this, between enter and exit. */
    private void step() {
        if (iterator == null) {
            if (family == families.size()) {
                writer.end();
                ended = true;
                releaseHandles();
                return;
            }
            iterator = database.newIterator(families.get(family), read);
            iterator.seekToFirst();
        }
        if (iterator.isValid()) {
            writer.record(TAGS[family], iterator.key(), iterator.value());
            iterator.next();
            return;
        }
        try {
            iterator.status();
        } catch (RocksDBException e) {
            throw new UnavailableException("reading the store at " + database.directory() + " for a backup failed: "
                    + e.getMessage(), e);
        }
        iterator.close();
        iterator = null;
        family++;
    }

    /** Releases the snapshot and its iterator; later calls of {@link #next} fail. Idempotent. */
    @Override
    public void close() {
        try {
            database.enter();
        } catch (UnavailableException closed) {
            return; // the engine's close released this backup already
        }
        try {
            releaseNow();
        } finally {
            database.exit();
        }
    }

    /** Releases the handles; call between enter and exit, or from the engine's close. */
    void releaseNow() {
        synchronized (this) {
            releaseHandles();
        }
        onClose.accept(this);
    }

    private void releaseHandles() {
        if (snapshot == null) {
            return;
        }
        if (iterator != null) {
            iterator.close();
            iterator = null;
        }
        read.close();
        database.release(snapshot);
        snapshot = null;
    }
}
