package io.fencer.store;

import io.fencer.core.InternalException;
import io.fencer.core.LimitExceededException;
import io.fencer.core.UnavailableException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;

/**
 * The store's one committing thread. Writes to any scope, from any thread, queue here in arrival order; whenever it
 * comes round, the thread takes every queued write (within {@link #BATCH_WRITES_MAX} and the byte bound) as one
 * batch and hands it to the engine, which admits each write and writes the admitted ones in one synced RocksDB
 * write.
 *
 * <p>Why one thread: a batch then costs one fsync and one wake-up, however many writes and scopes it holds, and the
 * threads that queued them need not wait at all. With a blocked thread per write (the design before it), every
 * write paid a hand-off to a worker and a wake-up from RocksDB's own group commit, and on a 2-core machine those
 * wake-ups cost more CPU than the writes.
 *
 * <p>Bounded: at most {@code writesMax} writes and {@code bytesMax} bytes wait; beyond that a write is refused with
 * {@link LimitExceededException} before it is queued.
 */
final class WriteCommitter {
    private static final System.Logger LOG = System.getLogger(WriteCommitter.class.getName());
    /** The most writes in one batch. */
    static final int BATCH_WRITES_MAX = 1024;

    private final ConcurrentLinkedQueue<PendingWrite> queue = new ConcurrentLinkedQueue<>();
    private final AtomicInteger queuedWrites = new AtomicInteger();
    private final AtomicLong queuedBytes = new AtomicLong();
    private final int writesMax;
    private final long bytesMax;
    private final long batchBytesMax;
    private final Consumer<List<PendingWrite>> engine;
    private final Thread thread;
    /** True while the thread is about to park or parked; a submitter then wakes it. */
    private volatile boolean sleeping;
    private volatile boolean stopping;

    /**
     * Starts the thread.
     *
     * @param batchBytesMax a batch stops before the write that would take it over this; a larger write goes alone
     * @param engine commits one batch and completes every write of it; runs on the committer's thread only
     */
    WriteCommitter(String name, int writesMax, long bytesMax, long batchBytesMax,
            Consumer<List<PendingWrite>> engine) {
        this.writesMax = writesMax;
        this.bytesMax = bytesMax;
        this.batchBytesMax = batchBytesMax;
        this.engine = engine;
        this.thread = new Thread(this::run, name);
        thread.setDaemon(true);
        thread.start();
    }

    /**
     * Queues {@code write}; it is completed on the committer's thread.
     *
     * @throws UnavailableException when the committer is stopping
     * @throws LimitExceededException when {@code writesMax} writes or {@code bytesMax} bytes already wait
     */
    void submit(PendingWrite write) {
        if (stopping) {
            throw new UnavailableException("the store is closing; the write to scope '" + write.scope
                    + "' with token " + write.token + " was not applied");
        }
        if (queuedWrites.incrementAndGet() > writesMax) {
            queuedWrites.decrementAndGet();
            throw new LimitExceededException("writesQueuedMax", writesMax, "the store has " + writesMax
                    + " writes waiting to be committed, the most allowed (writesQueuedMax); retry later");
        }
        long bytes = queuedBytes.addAndGet(write.bytes);
        if (bytes > bytesMax && bytes != write.bytes) { // a write alone is always let in: the engine bounds it
            queuedWrites.decrementAndGet();
            queuedBytes.addAndGet(-write.bytes);
            throw new LimitExceededException("writeBytesQueuedMax", bytesMax, "the store has " + bytesMax
                    + " bytes of writes waiting to be committed, the most allowed (writeBytesQueuedMax); retry later");
        }
        queue.add(write);
        if (sleeping) {
            LockSupport.unpark(thread);
        }
    }

    /** Returns the number of queued writes to {@code scope} not yet taken into a batch; for tests. */
    int queued(String scope) {
        return (int) queue.stream().filter(write -> write.scope.equals(scope)).count();
    }

    boolean isCommitterThread() {
        return Thread.currentThread() == thread;
    }

    /**
     * Stops taking writes, commits those already queued, and waits for the thread to end. Writes queued after
     * that are returned by {@link #leftovers}.
     */
    void stop() {
        if (isCommitterThread()) {
            throw new IllegalStateException("the store cannot be closed from its committer thread");
        }
        stopping = true;
        LockSupport.unpark(thread);
        boolean interrupted = false;
        while (thread.isAlive()) {
            try {
                thread.join();
            } catch (InterruptedException e) {
                interrupted = true; // the queued writes must still be completed before the store closes
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /** Takes the writes queued after the thread ended; call after {@link #stop}, when no write can be queued. */
    List<PendingWrite> leftovers() {
        assert !thread.isAlive() : "leftovers taken while the committer runs";
        List<PendingWrite> leftovers = new ArrayList<>(queue);
        queue.clear();
        return leftovers;
    }

    private void run() {
        while (true) {
            List<PendingWrite> batch = take();
            if (!batch.isEmpty()) {
                commit(batch);
            } else if (stopping) {
                return;
            } else {
                sleeping = true;
                if (queue.isEmpty() && !stopping) { // checked after announcing the sleep: no wake-up is missed
                    LockSupport.park(this);
                }
                sleeping = false;
            }
        }
    }

    /** Takes queued writes in arrival order, up to {@link #BATCH_WRITES_MAX} and {@code batchBytesMax}. */
    private List<PendingWrite> take() {
        List<PendingWrite> batch = new ArrayList<>();
        long bytes = 0;
        for (PendingWrite next = queue.peek(); next != null && batch.size() < BATCH_WRITES_MAX;
                next = queue.peek()) {
            if (!batch.isEmpty() && bytes + next.bytes > batchBytesMax) {
                break;
            }
            PendingWrite taken = queue.poll();
            assert taken == next : "the committer's queue gave " + taken + " after peeking " + next;
            batch.add(taken);
            bytes += taken.bytes;
            queuedWrites.decrementAndGet();
            queuedBytes.addAndGet(-taken.bytes);
        }
        return batch;
    }

    /** Commits one batch; a programmer error fails the writes it left uncompleted, and the thread goes on. */
    private void commit(List<PendingWrite> batch) {
        try {
            engine.accept(batch);
        } catch (RuntimeException | Error e) {
            LOG.log(System.Logger.Level.ERROR, "a batch of " + batch.size() + " writes failed unexpectedly", e);
            for (PendingWrite write : batch) {
                if (!write.outcome().isDone()) {
                    write.decide(new InternalException("the batch that took the write of token " + write.token
                            + " to scope '" + write.scope + "' failed; it may or may not have been applied: " + e));
                    write.complete();
                }
            }
        }
    }
}
