package io.fencer.store;

import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.WriteBatch;
import org.rocksdb.WriteOptions;

/**
 * The engine's synced writes made without a sync ({@code sync=false}, WAL on): a store that acknowledges a write
 * before its WAL is on disk. Only a power loss or a kernel crash loses such writes; a SIGKILL does not, since the
 * page cache survives the process. The control of {@link StoreEngineWalSyncTest}.
 */
final class UnsyncedWrites implements SyncedWrites {
    @Override
    public void write(RocksDB db, WriteOptions sync, WriteBatch batch) throws RocksDBException {
        try (WriteOptions unsynced = new WriteOptions().setSync(false)) {
            db.write(unsynced, batch);
        }
    }

    @Override
    public void put(RocksDB db, WriteOptions sync, ColumnFamilyHandle family, byte[] key, byte[] value)
            throws RocksDBException {
        try (WriteOptions unsynced = new WriteOptions().setSync(false)) {
            db.put(family, unsynced, key, value);
        }
    }

    @Override
    public void syncWal(RocksDB db) {
        // the control: nothing waits for the disk
    }
}
