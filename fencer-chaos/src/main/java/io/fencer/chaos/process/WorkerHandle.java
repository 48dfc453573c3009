package io.fencer.chaos.process;

import io.fencer.chaos.history.HistoryEvent;
import io.fencer.chaos.history.HistoryJson;
import io.fencer.chaos.history.HistoryLog;
import io.fencer.chaos.workload.WorkerControl;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.IntFunction;

/**
 * The harness's side of one worker: its current process (a killed worker is started again under the same name
 * and history file), and the pause armed against it. Arming a pause asks the worker to hold after its next read;
 * the pause fires on that held {@code read} line, from the thread that reads the worker's output, and only then lets
 * the worker go on, so the worker is frozen between its read and its write, whatever its think. The
 * worker's {@code wrote} lines say when it last had a write acknowledged, which the harness uses to hold another
 * worker's pause until someone wrote past it.
 */
public final class WorkerHandle implements AutoCloseable {
    private static final Duration READY_TIMEOUT = Duration.ofSeconds(90);

    public final String id;
    private final Path historyFile;
    private final IntFunction<List<String>> argumentsForIncarnation;
    private final Launcher launcher;
    private final Path logDirectory;
    private final HistoryLog nemesis;
    private final AtomicReference<CountDownLatch> armedPause = new AtomicReference<>();
    private volatile ChildProcess process;
    /** When the worker last said it read under a grant ({@code System.nanoTime()}), or 0. */
    private volatile long lastReadNanos;
    /** When the worker last said a write of its was acknowledged ({@code System.nanoTime()}), or 0. */
    private volatile long lastWriteNanos;
    /** When the worker was last frozen ({@code System.nanoTime()}), or 0. */
    private volatile long frozenNanos;
    private int incarnation;

    public WorkerHandle(String id, Path historyFile, Launcher launcher, Path logDirectory, HistoryLog nemesis,
            IntFunction<List<String>> argumentsForIncarnation) {
        this.id = id;
        this.historyFile = historyFile;
        this.launcher = launcher;
        this.logDirectory = logDirectory;
        this.nemesis = nemesis;
        this.argumentsForIncarnation = argumentsForIncarnation;
    }

    /** Starts the worker's next incarnation. */
    public void start() throws IOException {
        incarnation++;
        process = ChildProcess.start(id, launcher, argumentsForIncarnation.apply(incarnation),
                logDirectory, this::onLine);
    }

    /** Waits for the worker's {@code ready} line (its first session is open). */
    public void awaitReady() {
        String line = process.awaitLine(READY_TIMEOUT);
        if (!WorkerControl.isReady(line)) {
            throw new IllegalStateException(id + " said '" + line + "' instead of ready");
        }
    }

    private void onLine(String line) {
        if (WorkerControl.isRead(line)) {
            lastReadNanos = System.nanoTime();
            if (WorkerControl.isHeldRead(line)) {
                CountDownLatch latch = armedPause.getAndSet(null);
                if (latch != null) {
                    freeze();
                    latch.countDown();
                }
                // frozen, it reads the go once resumed; unarmed (the arming timed out), it goes on at once
                process.send(WorkerControl.GO);
            }
        } else if (WorkerControl.isWrote(line)) {
            lastWriteNanos = System.nanoTime();
        }
    }

    /** Returns when the worker last had a write acknowledged, on {@code System.nanoTime()}; 0 when it never did. */
    public long lastWriteNanos() {
        return lastWriteNanos;
    }

    /** Returns when the worker was last frozen, on {@code System.nanoTime()}; 0 when it never was. */
    public long frozenNanos() {
        return frozenNanos;
    }

    /** Returns when the worker last read under a grant, on {@code System.nanoTime()}; 0 when it never did. */
    public long lastReadNanos() {
        return lastReadNanos;
    }

    /**
     * Freezes the worker right after its next read under a grant, waiting at most {@code wait} for it; when it
     * does not read in time (it waits for the lock), freezes it wherever it is.
     *
     * @return whether the worker was frozen right after a read (false: wherever it was)
     */
    public boolean pauseAfterNextRead(Duration wait) throws InterruptedException {
        CountDownLatch latch = new CountDownLatch(1);
        armedPause.set(latch);
        process.send(WorkerControl.HOLD);
        if (!latch.await(wait.toMillis(), TimeUnit.MILLISECONDS) && armedPause.getAndSet(null) != null) {
            freeze();
            return false;
        }
        return true;
    }

    private void freeze() {
        frozenNanos = System.nanoTime();
        process.pause();
        nemesis.info(HistoryEvent.Op.PAUSE, id);
    }

    public void resume() {
        process.resume();
        nemesis.info(HistoryEvent.Op.RESUME, id);
    }

    /** Kills the worker (SIGKILL) and records its unfinished operation, if any, as unknown. */
    public void kill() throws IOException {
        process.kill();
        nemesis.info(HistoryEvent.Op.KILL, id);
        closeUnfinished("killed");
    }

    /**
     * Asks the worker to stop after its cycle, without waiting: the harness asks every worker first, then waits
     * for each ({@link #awaitStop}), so the workers wind down together rather than one after another.
     */
    public void requestStop() {
        process.closeInput();
    }

    /**
     * Waits for the worker asked to stop ({@link #requestStop}) to exit; kills it when it has not exited within
     * {@code timeout}, a kill marked {@link HistoryEvent#END_OF_RUN}: no fault, so a run's kills leave it out.
     */
    public void awaitStop(Duration timeout) throws IOException {
        if (process.awaitExit(timeout) < 0) {
            process.close();
            nemesis.append(HistoryEvent.of(nemesis.nowMicros(), nemesis.process(), HistoryEvent.Type.INFO,
                    HistoryEvent.Op.KILL).withTarget(id).withValue(HistoryEvent.END_OF_RUN));
            closeUnfinished("killed at the end of the run");
        }
    }

    /**
     * Appends an unknown completion for the operation the worker's history leaves open: a killed process's last
     * operation may or may not have happened.
     */
    private void closeUnfinished(String why) throws IOException {
        if (!Files.exists(historyFile)) {
            return;
        }
        List<String> lines = Files.readAllLines(historyFile);
        for (int i = lines.size() - 1; i >= 0; i--) {
            if (lines.get(i).isBlank()) {
                continue;
            }
            HistoryEvent last = HistoryJson.parse(lines.get(i));
            if (last.type() == HistoryEvent.Type.INFO) {
                continue; // a note (the worker's lease belief) says nothing about the last operation
            }
            if (last.type() == HistoryEvent.Type.INVOKE) {
                try (HistoryLog log = HistoryLog.open(historyFile, id, 0)) {
                    log.append(new HistoryEvent(nemesis.nowMicros(), id, HistoryEvent.Type.UNKNOWN, last.op(),
                            last.token(), last.value(), 0, "", "worker " + why + " before the outcome", ""));
                }
            }
            return;
        }
    }

    @Override
    public void close() {
        ChildProcess current = process;
        if (current != null) {
            current.close();
        }
    }
}
