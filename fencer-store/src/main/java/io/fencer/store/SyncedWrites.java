package io.fencer.store;

import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.WriteBatch;
import org.rocksdb.WriteOptions;

/**
 * The store's synced RocksDB writes: every write the engine must have on disk before it answers (a batch of
 * queued writes, a unit's commit, a fence record alone, an import's log sync) goes through one. {@link #ROCKSDB} makes them; tests in
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

        @Override
        public void syncWal(RocksDB db) throws RocksDBException {
            db.syncWal();
        }
    };

    /**
     * Writes without waiting for the disk: for a replica of the replicated store, whose durability is the Raft log's
     * (a majority fsync'd the entry before it was applied) and whose database is rebuilt from a snapshot and the log
     * on every start. RocksDB still writes its own log, so a write survives the process; only a crash of the machine
     * may lose it, and the rebuild recovers it.
     */
    SyncedWrites UNSYNCED = new SyncedWrites() {
        @Override
        public void write(RocksDB db, WriteOptions sync, WriteBatch batch) throws RocksDBException {
            db.write(Unsynced.OPTIONS, batch);
        }

        @Override
        public void put(RocksDB db, WriteOptions sync, ColumnFamilyHandle family, byte[] key, byte[] value)
                throws RocksDBException {
            db.put(family, Unsynced.OPTIONS, key, value);
        }

        @Override
        public void syncWal(RocksDB db) {
            // the Raft log is the replica's durability; see above
        }
    };

    /** The unsynced write options, made on first use: after the database opened, which loads RocksDB's library. */
    final class Unsynced {
        static final WriteOptions OPTIONS = new WriteOptions().setSync(false);

        private Unsynced() {}
    }

    /** Writes {@code batch} to {@code db} with the engine's synced write options {@code sync}. */
    void write(RocksDB db, WriteOptions sync, WriteBatch batch) throws RocksDBException;

    /** Puts one record to {@code db} with the engine's synced write options {@code sync}. */
    void put(RocksDB db, WriteOptions sync, ColumnFamilyHandle family, byte[] key, byte[] value)
            throws RocksDBException;

    /**
     * Syncs RocksDB's log: every write made before, with or without a sync, is on disk when this returns. An import
     * of many scopes writes each without a sync and then syncs once, rather than once a scope.
     */
    void syncWal(RocksDB db) throws RocksDBException;
}
