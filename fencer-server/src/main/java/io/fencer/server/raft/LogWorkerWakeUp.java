package io.fencer.server.raft;

import java.lang.reflect.Field;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.raftlog.RaftLog;
import org.apache.ratis.util.DataBlockingQueue;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Wakes the idle log worker of a closing Ratis division, so that closing a peer does not wait out the worker's poll.
 *
 * <p>Why: Ratis 3.3.0's {@code SegmentedRaftLogWorker.close()} clears its {@code running} flag and then waits for its
 * thread, which only sees the flag when its one-second poll of an empty queue times out: every close of a peer took
 * about a second more than its work (measured: 0.96 s of a 0.98 s close of a one-peer server). Once the flag is
 * cleared and the queue is empty, Ratis itself treats an interrupt of that poll as the end of the worker ("was
 * interrupted, exiting"), so this class interrupts the worker thread then, and only then: not while it runs a task
 * (it must be parked in the queue's poll), not while the flag is set, and not when the thread cannot be told apart
 * from another division's worker of the same name in this JVM. Whatever it cannot read (a Ratis upgrade that renamed
 * the fields) leaves Ratis's own wait in place.
 */
final class LogWorkerWakeUp {
    private static final Logger LOG = LoggerFactory.getLogger(LogWorkerWakeUp.class);
    /** Ratis's worker waits this long for its thread; looking longer is pointless. */
    private static final Duration LOOK_MAX = Duration.ofSeconds(3);
    private static final long LOOK_INTERVAL_MILLIS = 2;
    private static final String WORKER_CLASS = "org.apache.ratis.server.raftlog.segmented.SegmentedRaftLogWorker";

    private final Object worker;
    private final Field running;
    private final DataBlockingQueue<?> queue;
    private final String threadName;

    private LogWorkerWakeUp(Object worker, Field running, DataBlockingQueue<?> queue) {
        this.worker = worker;
        this.running = running;
        this.queue = queue;
        this.threadName = worker.toString();
    }

    /**
     * Starts watching the log worker of {@code division}, which is about to be closed, on a daemon thread that ends
     * when it woke the worker, when the worker ended by itself, or after {@link #LOOK_MAX}.
     */
    static void watch(RaftServer.Division division) {
        LogWorkerWakeUp wakeUp = of(division);
        if (wakeUp == null) {
            return;
        }
        Thread watcher = new Thread(wakeUp::run, "fencer-log-worker-wake-up");
        watcher.setDaemon(true);
        watcher.start();
    }

    /** Returns a watcher of the log worker of {@code division}, or null when this Ratis keeps it elsewhere. */
    static LogWorkerWakeUp of(RaftServer.Division division) {
        try {
            RaftLog log = division.getRaftLog();
            Field workerField = log.getClass().getDeclaredField("fileLogWorker");
            workerField.setAccessible(true);
            Object worker = workerField.get(log);
            if (worker == null || !worker.getClass().getName().equals(WORKER_CLASS)) {
                return null;
            }
            Field running = worker.getClass().getDeclaredField("running");
            running.setAccessible(true);
            Field queueField = worker.getClass().getDeclaredField("queue");
            queueField.setAccessible(true);
            return new LogWorkerWakeUp(worker, running, (DataBlockingQueue<?>) queueField.get(worker));
        } catch (ReflectiveOperationException | RuntimeException e) {
            LOG.debug("cannot watch the raft log worker; its close waits out its poll", e);
            return null;
        }
    }

    private void run() {
        long deadline = System.nanoTime() + LOOK_MAX.toNanos();
        try {
            while (System.nanoTime() < deadline) {
                if (!running.getBoolean(worker) && queue.getNumElements() == 0) {
                    List<Thread> threads = workerThreads();
                    if (threads.isEmpty()) {
                        return; // ended by itself
                    }
                    if (threads.size() > 1) {
                        return; // another division's worker has the same name: let Ratis wait
                    }
                    if (parkedInPoll(threads.get(0))) {
                        threads.get(0).interrupt();
                        return;
                    }
                }
                Thread.sleep(LOOK_INTERVAL_MILLIS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (IllegalAccessException e) {
            LOG.debug("cannot read the raft log worker's state", e);
        }
    }

    private List<Thread> workerThreads() {
        List<Thread> threads = new ArrayList<>();
        for (Map.Entry<Thread, StackTraceElement[]> entry : Thread.getAllStackTraces().entrySet()) {
            if (entry.getKey().getName().equals(threadName) && runsWorker(entry.getValue())) {
                threads.add(entry.getKey());
            }
        }
        return threads;
    }

    private static boolean runsWorker(StackTraceElement[] stack) {
        for (StackTraceElement frame : stack) {
            if (frame.getClassName().equals(WORKER_CLASS)) {
                return true;
            }
        }
        return false;
    }

    /** True when the thread waits in the queue's poll, called from the worker's loop: it runs no task. */
    private static boolean parkedInPoll(Thread thread) {
        if (thread.getState() != Thread.State.TIMED_WAITING) {
            return false;
        }
        StackTraceElement[] stack = thread.getStackTrace();
        for (int i = 0; i + 1 < stack.length; i++) {
            if (stack[i].getClassName().equals(DataBlockingQueue.class.getName())
                    && stack[i].getMethodName().equals("poll")) {
                return stack[i + 1].getClassName().equals(WORKER_CLASS) && stack[i + 1].getMethodName().equals("run");
            }
        }
        return false;
    }
}
