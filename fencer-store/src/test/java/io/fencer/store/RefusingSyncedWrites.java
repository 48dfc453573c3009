package io.fencer.store;

import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.WriteBatch;
import org.rocksdb.WriteOptions;

/**
 * Synced writes that RocksDB itself refuses while {@link #refuse} is on: each is then made with the WAL disabled,
 * which RocksDB rejects in a database that reuses its log files ("WriteOptions::disableWAL option is not supported
 * if DBOptions::recycle_log_file_num > 0"), so tests reach the failure path of a real {@code db.write}. Otherwise
 * writes as {@link SyncedWrites#ROCKSDB} does.
 */
final class RefusingSyncedWrites implements SyncedWrites {
    private volatile boolean refusing;

    /** Makes every later synced write fail while {@code refuse} is true. */
    void refuse(boolean refuse) {
        this.refusing = refuse;
    }

    @Override
    public void write(RocksDB db, WriteOptions sync, WriteBatch batch) throws RocksDBException {
        if (!refusing) {
            db.write(sync, batch);
            return;
        }
        try (WriteOptions refused = withoutWal()) {
            db.write(refused, batch);
        }
    }

    @Override
    public void put(RocksDB db, WriteOptions sync, ColumnFamilyHandle family, byte[] key, byte[] value)
            throws RocksDBException {
        if (!refusing) {
            db.put(family, sync, key, value);
            return;
        }
        try (WriteOptions refused = withoutWal()) {
            db.put(family, refused, key, value);
        }
    }

    private static WriteOptions withoutWal() {
        return new WriteOptions().setSync(true).setDisableWAL(true);
    }

    @Override
    public void syncWal(RocksDB db) throws RocksDBException {
        if (refusing) {
            throw new RocksDBException("the log's sync was refused by the test");
        }
        db.syncWal();
    }
}
