package io.fencer.server;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

/**
 * Copies everything written to standard error, where the tests' logger writes, into a buffer from {@link #start}
 * until {@link #close}, and still passes it on to the real standard error.
 */
public final class CapturedStandardError implements AutoCloseable {
    private final PrintStream original;
    private final ByteArrayOutputStream captured = new ByteArrayOutputStream();

    private CapturedStandardError(PrintStream original) {
        this.original = original;
    }

    /** Starts copying standard error; close to put the real one back. */
    public static CapturedStandardError start() {
        CapturedStandardError capture = new CapturedStandardError(System.err);
        System.setErr(new PrintStream(new Tee(capture.original, capture.captured), true, StandardCharsets.UTF_8));
        return capture;
    }

    /** Returns what was written so far. */
    public String text() {
        return captured.toString(StandardCharsets.UTF_8); // synchronized on the buffer, as its writes are
    }

    @Override
    public void close() {
        System.setErr(original);
    }

    /** Writes to two streams, one write at a time. */
    private static final class Tee extends OutputStream {
        private final OutputStream first;
        private final OutputStream second;

        Tee(OutputStream first, OutputStream second) {
            this.first = first;
            this.second = second;
        }

        @Override
        public synchronized void write(int b) throws IOException {
            first.write(b);
            second.write(b);
        }

        @Override
        public synchronized void write(byte[] bytes, int offset, int length) throws IOException {
            first.write(bytes, offset, length);
            second.write(bytes, offset, length);
        }

        @Override
        public synchronized void flush() throws IOException {
            first.flush();
            second.flush();
        }
    }
}
