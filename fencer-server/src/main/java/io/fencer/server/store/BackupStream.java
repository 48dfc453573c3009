package io.fencer.server.store;

import com.google.protobuf.ByteString;
import io.fencer.api.v1.StoreBackupChunk;
import io.fencer.core.LimitExceededException;
import io.fencer.server.rpc.Replies;
import io.fencer.server.rpc.StallWatch;
import io.fencer.store.StoreBackup;
import io.grpc.stub.ServerCallStreamObserver;
import java.time.Duration;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One {@code Store.Backup} call: pieces of the store's backup made on the store's workers (they read RocksDB) only
 * while the client can take them (gRPC's flow control), so a slow client holds neither memory nor a thread; the
 * snapshot and the call's slot among the backups in flight are released when the call ends, however it ends: a
 * client that takes nothing for the stall timeout ends it too ({@link StallWatch}).
 */
final class BackupStream implements Runnable {
    private static final Logger LOG = LoggerFactory.getLogger(BackupStream.class);
    /** The most bytes of a backup in one message (store.proto). */
    static final int CHUNK_BYTES_MAX = 1 << 20;

    private final ServerCallStreamObserver<StoreBackupChunk> call;
    private final StoreBackup backup;
    private final Executor workers;
    private final Runnable slot;
    private final AtomicBoolean scheduled = new AtomicBoolean();
    private volatile StallWatch stall;
    private final long startedNanos = System.nanoTime();
    /** Guarded by this. */
    private boolean ended;
    private long bytesSent;

    /** @param slot frees the call's slot among the backups in flight; run once the snapshot is released */
    BackupStream(ServerCallStreamObserver<StoreBackupChunk> call, StoreBackup backup, Executor workers,
            Runnable slot) {
        this.call = call;
        this.backup = backup;
        this.workers = workers;
        this.slot = slot;
    }

    /**
     * Sets the call's handlers and sends the first pieces; call from the service method, before it returns.
     *
     * @param timers where the backup's stall is looked for, once per {@code stallTimeout}
     */
    void start(ScheduledExecutorService timers, Duration stallTimeout) {
        stall = StallWatch.start(call, timers, stallTimeout, "backupStallTimeout", this::fail);
        call.setOnReadyHandler(this::schedule);
        call.setOnCancelHandler(this::cancelled);
        schedule();
    }

    private void schedule() {
        if (!scheduled.compareAndSet(false, true)) {
            return;
        }
        try {
            workers.execute(this);
        } catch (RejectedExecutionException e) {
            scheduled.set(false);
            fail(new LimitExceededException("storeWorkQueueMax", 0, "the store's workers are busy; the backup"
                    + " could not go on: try again"));
        }
    }

    /** Sends pieces while the client can take them; runs on a worker, one at a time. */
    @Override
    public void run() {
        try {
            synchronized (this) {
                while (!ended && call.isReady()) {
                    byte[] piece = backup.next(CHUNK_BYTES_MAX);
                    if (piece == null) {
                        ended = true;
                        release();
                        call.onCompleted();
                        LOG.info("store backup sent: {} bytes, snapshot at sequence {}, in {} ms", bytesSent,
                                backup.sequence(), (System.nanoTime() - startedNanos) / 1_000_000);
                        return;
                    }
                    call.onNext(StoreBackupChunk.newBuilder().setData(ByteString.copyFrom(piece)).build());
                    bytesSent += piece.length;
                    stall.sent();
                }
            }
        } catch (RuntimeException e) {
            fail(e);
        } finally {
            scheduled.set(false);
        }
        // a ready signal that came while this ran found it scheduled: look again
        if (call.isReady() && !isEnded()) {
            schedule();
        }
    }

    private void release() {
        stall.stop();
        backup.close();
        slot.run();
    }

    private synchronized boolean isEnded() {
        return ended;
    }

    private void cancelled() {
        synchronized (this) {
            ended = true;
        }
        release();
    }

    private void fail(Throwable error) {
        synchronized (this) {
            if (ended) {
                return;
            }
            ended = true;
        }
        release();
        LOG.warn("store backup failed after {} bytes: {}", bytesSent, error.getMessage());
        Replies.send(call, null, error);
    }
}
