package io.fencer.core;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Objects;

/**
 * Test only: a {@link Ticker} that runs at a rate and jumps forward as a small file says, so a chaos run can give one
 * process a clock that runs fast or slow, or jumps, while every other process (and the run's history) keeps the
 * host's. A process gets one when the JVM system property {@value #CLOCK_FILE_PROPERTY} names the file; without it
 * {@link #fromSystemProperty()} returns {@link Ticker#system()}, and nothing else of this class runs.
 *
 * <p>The file holds one line, {@code <jumpNanos> <rate>}: the total of the forward jumps so far and the rate (1.0 is
 * the host's, 1.5 half as fast again, 0.5 half as fast). It is read again at most every {@value #READ_EVERY_MILLIS}
 * ms; a missing or malformed file changes nothing. The readings stay monotonic, as {@link Ticker} promises: a new rate
 * applies from the moment it is read (the time so far is kept), the jump total only grows (a smaller one is ignored),
 * and the rate must be positive. It reaches what Fencer times through its {@code Ticker}: session deadlines and their
 * expiry on a lock server, the local lease on a client; not Ratis's own timers.
 */
public final class SkewedTicker implements Ticker {
    /** The JVM system property naming the clock file; unset in production. */
    public static final String CLOCK_FILE_PROPERTY = "fencer.testing.clockFile";
    /** How often the file is read again at most. */
    static final long READ_EVERY_MILLIS = 10;
    /** The slowest and fastest rates accepted: beyond them a run measures nothing but its own clock. */
    static final double RATE_MIN = 0.01;
    static final double RATE_MAX = 100;

    private final Path file;
    private final Ticker host;
    private long readNanos;
    private boolean read;
    private long baseHostNanos;
    private long baseNanos;
    private double rate = 1.0;
    private long jumpNanos;

    SkewedTicker(Path file, Ticker host) {
        this.file = Objects.requireNonNull(file, "file");
        this.host = Objects.requireNonNull(host, "host");
        this.baseHostNanos = host.nanoTime();
        this.baseNanos = baseHostNanos;
    }

    /**
     * Returns the skewed ticker of the file {@value #CLOCK_FILE_PROPERTY} names, or {@link Ticker#system()} when the
     * property is unset (always, outside tests).
     */
    public static Ticker fromSystemProperty() {
        String file = System.getProperty(CLOCK_FILE_PROPERTY);
        return file == null || file.isBlank() ? Ticker.system() : new SkewedTicker(Path.of(file), Ticker.system());
    }

    /**
     * Writes the clock file {@code file} for a process whose clock has jumped {@code jumpNanos} in total and runs at
     * {@code rate}; atomically, so a reader sees the old line or the new one.
     */
    public static void write(Path file, long jumpNanos, double rate) throws IOException {
        if (!(rate >= RATE_MIN && rate <= RATE_MAX) || jumpNanos < 0) {
            throw new IllegalArgumentException("clock rate " + rate + " outside [" + RATE_MIN + ", " + RATE_MAX
                    + "] or negative jump " + jumpNanos + " ns");
        }
        Path temporary = file.resolveSibling(file.getFileName() + ".tmp");
        Files.writeString(temporary, jumpNanos + " " + rate + "\n", StandardCharsets.UTF_8);
        Files.move(temporary, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    @Override
    public synchronized long nanoTime() {
        long now = host.nanoTime();
        if (!read || now - readNanos >= READ_EVERY_MILLIS * 1_000_000) {
            read = true;
            readNanos = now;
            reload(now);
        }
        return skewed(now);
    }

    /** Returns the rate this ticker runs at now, relative to the host's clock. */
    public synchronized double rate() {
        return rate;
    }

    private long skewed(long hostNanos) {
        return baseNanos + (long) ((hostNanos - baseHostNanos) * rate) + jumpNanos;
    }

    private void reload(long now) {
        String line;
        try {
            line = Files.readString(file, StandardCharsets.UTF_8).strip();
        } catch (IOException e) {
            return; // no file yet: the host's clock
        }
        String[] parts = line.split("\\s+");
        if (parts.length != 2) {
            return;
        }
        try {
            long jump = Long.parseLong(parts[0]);
            double newRate = Double.parseDouble(parts[1]);
            if (newRate >= RATE_MIN && newRate <= RATE_MAX && newRate != rate) {
                baseNanos = skewed(now) - jumpNanos; // the time so far stays; the new rate runs from now
                baseHostNanos = now;
                rate = newRate;
            }
            if (jump > jumpNanos) {
                jumpNanos = jump;
            }
        } catch (NumberFormatException e) {
            // a torn or foreign line: keep the clock as it was
        }
    }
}
