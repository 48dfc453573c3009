package io.fencer.chaos;

import io.fencer.chaos.process.WorkerHandle;
import java.io.PrintStream;
import java.time.Duration;
import java.util.List;
import java.util.Locale;

/**
 * Holds a paused worker frozen past its scheduled pause until another worker had a write acknowledged since the
 * freeze: the paused worker's write then comes after a newer holder's, the case fencing exists for, on every pause.
 * Without the hold, a pause on a busy machine (an election, another run beside it) could end before the lock passed
 * on; the paused worker then wrote in turn, nothing was stale, and a control run (fencing off) of a fixed seed found
 * no violation.
 */
final class PauseHold {
    private static final long POLL_MILLIS = 50;

    private PauseHold() {}

    /**
     * Waits, at most {@code max}, until a worker of {@code workers} other than {@code paused} had a write
     * acknowledged after {@code paused} was frozen, and narrates a hold longer than one poll on {@code out}.
     *
     * @return whether another worker wrote (false: {@code max} ran out, and the pause ends anyway)
     */
    static boolean untilAnotherWrote(WorkerHandle paused, List<WorkerHandle> workers, Duration max,
            PrintStream out) throws InterruptedException {
        long frozenNanos = paused.frozenNanos();
        long scheduledEndNanos = System.nanoTime();
        long deadlineNanos = scheduledEndNanos + max.toNanos();
        while (workers.stream().filter(worker -> worker != paused)
                .noneMatch(worker -> worker.lastWriteNanos() - frozenNanos > 0)) {
            if (System.nanoTime() - deadlineNanos > 0) {
                out.println("    no other worker wrote within " + max.toMillis() + " ms more: " + paused.id
                        + " resumes");
                out.flush();
                return false;
            }
            Thread.sleep(POLL_MILLIS);
        }
        long heldNanos = System.nanoTime() - scheduledEndNanos;
        if (heldNanos > POLL_MILLIS * 1_000_000) {
            out.println(String.format(Locale.ROOT, "    %s held %.2f s more, until another worker wrote", paused.id,
                    heldNanos / 1e9));
            out.flush();
        }
        return true;
    }
}
