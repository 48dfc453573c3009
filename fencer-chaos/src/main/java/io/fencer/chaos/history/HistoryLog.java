package io.fencer.chaos.history;

import java.io.BufferedWriter;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.function.LongSupplier;

/**
 * One process's history file: events appended as JSON lines and flushed one by one, so a process killed with
 * SIGKILL leaves every line it recorded before the kill. Times are microseconds since the run's origin on the
 * host's monotonic clock, which every process of the run shares. Thread-safe.
 */
public final class HistoryLog implements AutoCloseable {
    private final String process;
    private final long originNanos;
    private final LongSupplier nanoClock;
    private final BufferedWriter writer;

    HistoryLog(Path file, String process, long originNanos, LongSupplier nanoClock) throws IOException {
        this.process = process;
        this.originNanos = originNanos;
        this.nanoClock = nanoClock;
        this.writer = Files.newBufferedWriter(file, StandardCharsets.UTF_8, StandardOpenOption.CREATE,
                StandardOpenOption.APPEND);
    }

    /** Opens {@code file} for appending, on the system's monotonic clock. */
    public static HistoryLog open(Path file, String process, long originNanos) throws IOException {
        return new HistoryLog(file, process, originNanos, System::nanoTime);
    }

    /** Returns the process whose history this is. */
    public String process() {
        return process;
    }

    /** Returns microseconds since the origin now. */
    public long nowMicros() {
        return Math.max(0, (nanoClock.getAsLong() - originNanos) / 1_000);
    }

    /** Records an event of this process, timed now. */
    public HistoryEvent record(HistoryEvent.Type type, HistoryEvent.Op op, long token, String value) {
        return append(HistoryEvent.of(nowMicros(), process, type, op).withToken(token).withValue(value));
    }

    /**
     * Records a completion carrying an error, timed now: its message and its reason in the error catalogue (empty
     * when it is none of the catalogue's).
     */
    public HistoryEvent failure(HistoryEvent.Type type, HistoryEvent.Op op, long token, String value, String error,
            String reason) {
        return append(HistoryEvent.of(nowMicros(), process, type, op).withToken(token).withValue(value)
                .withError(error).withReason(reason));
    }

    /** Records a fault or a note about {@code target}, timed now. */
    public HistoryEvent info(HistoryEvent.Op op, String target) {
        return append(HistoryEvent.of(nowMicros(), process, HistoryEvent.Type.INFO, op).withTarget(target));
    }

    /** Appends {@code event} and flushes it to the operating system. */
    public synchronized HistoryEvent append(HistoryEvent event) {
        try {
            writer.write(HistoryJson.format(event));
            writer.newLine();
            writer.flush();
            return event;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot append to the history of " + process, e);
        }
    }

    @Override
    public synchronized void close() throws IOException {
        writer.close();
    }
}
