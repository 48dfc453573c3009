package io.fencer.chaos.workload;

/**
 * The lines a chaos worker and its harness exchange, written and parsed here.
 *
 * <p>Worker to harness, on standard output: {@code ready <session>} (its first session is open), {@code read <token>}
 * (it read under a grant), {@code read <token> held} (it read, and waits for {@code go} before it goes on: the
 * harness asked it to), {@code wrote <token>} (a write of its was acknowledged).
 *
 * <p>Harness to worker, on standard input: {@link #HOLD} (after the next read, wait for {@code go}), {@link #GO},
 * {@link #STOP}; the end of input stops it as well. The hold is what makes a pause land between a read and its write
 * every time: freezing the process on seeing a plain {@code read} line raced the worker's think, and a short think
 * let the write out before the freeze, so a control run of a fixed seed sometimes found nothing stale.
 */
public final class WorkerControl {
    /** Asks the worker to wait for {@link #GO} after its next read. */
    public static final String HOLD = "hold";
    /** Lets a worker that holds after a read go on. */
    public static final String GO = "go";
    /** Asks the worker to stop after its cycle. */
    public static final String STOP = "stop";
    private static final String READ = "read ";
    private static final String HELD = " held";
    private static final String WROTE = "wrote ";
    private static final String READY = "ready";

    private WorkerControl() {}

    static String ready(long sessionId) {
        return READY + " " + sessionId;
    }

    static String read(long token, boolean held) {
        return READ + token + (held ? HELD : "");
    }

    static String wrote(long token) {
        return WROTE + token;
    }

    /** True for a {@code ready} line. */
    public static boolean isReady(String line) {
        return line.startsWith(READY);
    }

    /** True for a {@code read} line, held or not. */
    public static boolean isRead(String line) {
        return line.startsWith(READ);
    }

    /** True for a {@code read} line after which the worker waits for {@link #GO}. */
    public static boolean isHeldRead(String line) {
        return isRead(line) && line.endsWith(HELD);
    }

    /** True for a {@code wrote} line. */
    public static boolean isWrote(String line) {
        return line.startsWith(WROTE);
    }
}
