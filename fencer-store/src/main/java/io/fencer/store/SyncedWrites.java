package io.fencer.store;

import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.WriteBatch;
import org.rocksdb.WriteOptions;

/**
 * The store's synced RocksDB writes: every write the engine must have on disk before it answers (a batch of
 * queued writes, a unit's commit, a fence record alone) goes through one. {@link #ROCKSDB} makes them; tests in
 * this package pass another through {@code StoreEngine.open(Path, StoreOptions, SyncedWrites)} to reach the failure
 * paths of a real write.
 */
interface SyncedWrites {
    /** Writes with RocksDB and {@code sync}, as given. */
    SyncedWrites ROCKSDB = new SyncedWrites() {
        @Override
        public void write(RocksDB db, WriteOptions sync, WriteBatch batch) throws RocksDBException {
            db.write(sync, batch);
        }

        @Override
        public void put(RocksDB db, WriteOptions sync, ColumnFamilyHandle family, byte[] key, byte[] value)
                throws RocksDBException {
            db.put(family, sync, key, value);
        }
    };

    /** Writes {@code batch} to {@code db} with the engine's synced write options {@code sync}. */
    void write(RocksDB db, WriteOptions sync, WriteBatch batch) throws RocksDBException;

    /** Puts one record to {@code db} with the engine's synced write options {@code sync}. */
    void put(RocksDB db, WriteOptions sync, ColumnFamilyHandle family, byte[] key, byte[] value)
            throws RocksDBException;
}
