package io.fencer.core;

import java.lang.management.ManagementFactory;

/**
 * The budget one fuzz input's decode keeps to: its allocation and its time are bounded by the input's size, not by a
 * length or count the input claims. A decoder that allocated by a claimed count (say {@code new ArrayList<>(count)}
 * before reading the items) or looped on one would pass the "decodes or throws its typed error" check and fail here.
 * Every module's fuzz tests use this one, from this module's test jar.
 */
public final class FuzzBudget {
    /** What any decode may allocate besides its share per input byte: the exception, its message, its stack trace. */
    static final long BASE_BYTES = 4L << 20;
    /** What a decode may allocate per input byte: the decoded objects are a small multiple of the bytes. */
    static final long BYTES_PER_INPUT_BYTE = 256;
    /** A generous bound on one decode's time on a shared, noisy machine: a hang takes far longer. */
    static final long DECODE_MILLIS_MAX = 3_000;

    private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    private FuzzBudget() {}

    /** What a fuzz target runs: a decode that returns normally or throws its typed error (caught inside). */
    public interface Decode {
        void run() throws Exception;
    }

    /**
     * Runs {@code decode} of an input of {@code inputBytes} and fails when it broke the budget. A decode over it runs
     * once more before it fails, since the first run of a code path also loads and initializes classes.
     */
    public static void check(int inputBytes, Decode decode) throws Exception {
        if (!withinBudget(inputBytes, decode, false)) {
            withinBudget(inputBytes, decode, true);
        }
    }

    private static boolean withinBudget(int inputBytes, Decode decode, boolean last) throws Exception {
        long thread = Thread.currentThread().getId();
        long allocatedBefore = THREADS.getThreadAllocatedBytes(thread);
        long startNanos = System.nanoTime();
        decode.run();
        long millis = (System.nanoTime() - startNanos) / 1_000_000;
        long allocated = THREADS.getThreadAllocatedBytes(thread) - allocatedBefore;
        long allowed = BASE_BYTES + BYTES_PER_INPUT_BYTE * inputBytes;
        if (allocated <= allowed && millis <= DECODE_MILLIS_MAX) {
            return true;
        }
        if (!last) {
            return false;
        }
        if (allocated > allowed) {
            throw new AssertionError("decoding " + inputBytes + " bytes allocated " + allocated
                    + " bytes, over the " + allowed + " its size allows: an allocation sized by the input's claims");
        }
        if (millis > DECODE_MILLIS_MAX) {
            throw new AssertionError("decoding " + inputBytes + " bytes took " + millis + " ms, over "
                    + DECODE_MILLIS_MAX + " ms");
        }
        return true;
    }
}
