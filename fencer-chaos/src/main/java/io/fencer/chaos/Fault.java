package io.fencer.chaos;

import java.util.Locale;
import java.util.Objects;

/**
 * One scheduled fault of a chaos run.
 *
 * @param atMillis when it starts, in milliseconds after the workload started
 * @param kind what it does
 * @param worker for worker faults, the worker's number (1-based); else 0
 * @param durationMillis how long a pause lasts, or how long a killed process stays down before its restart
 */
public record Fault(long atMillis, Kind kind, int worker, long durationMillis) {

    /** The faults the harness can inject. */
    public enum Kind {
        /** SIGSTOP a worker right after it read under its grant, SIGCONT it after longer than its lease. */
        PAUSE("pause"),
        /** SIGKILL a worker; start it again later. */
        KILL_WORKER("kill-worker"),
        /** SIGKILL the store; restart it from its data directory. */
        KILL_STORE("kill-store"),
        /** SIGKILL the lock server (the group's leader with several peers); restart it from its data. */
        KILL_LOCK("kill-lock");

        private final String flag;

        Kind(String flag) {
            this.flag = flag;
        }

        /** Returns the kind's name on the command line and in reports ({@code kill-store}). */
        public String flag() {
            return flag;
        }

        /** Returns the kind named {@code flag}. */
        public static Kind ofFlag(String flag) {
            for (Kind kind : values()) {
                if (kind.flag.equals(flag.strip().toLowerCase(Locale.ROOT))) {
                    return kind;
                }
            }
            throw new IllegalArgumentException("unknown fault '" + flag + "': expected pause, kill-worker, "
                    + "kill-store or kill-lock");
        }
    }

    public Fault {
        Objects.requireNonNull(kind, "kind");
        if (atMillis < 0 || durationMillis < 0) {
            throw new IllegalArgumentException("negative time in fault " + kind + " at " + atMillis + " ms for "
                    + durationMillis + " ms");
        }
        boolean workerFault = kind == Kind.PAUSE || kind == Kind.KILL_WORKER;
        if (workerFault != (worker > 0)) {
            throw new IllegalArgumentException("fault " + kind + " with worker " + worker);
        }
    }

    /** Returns the fault's end, in milliseconds after the workload started. */
    public long endMillis() {
        return atMillis + durationMillis;
    }

    /** Returns e.g. {@code "at 4.20 s: pause w3 for 3.10 s"}. */
    @Override
    public String toString() {
        String target = switch (kind) {
            case PAUSE -> "pause w" + worker + " for ";
            case KILL_WORKER -> "kill -9 w" + worker + ", restart after ";
            case KILL_STORE -> "kill -9 the store, restart after ";
            case KILL_LOCK -> "kill -9 the lock leader, restart after ";
        };
        return String.format(Locale.ROOT, "at %.2f s: %s%.2f s", atMillis / 1000.0, target,
                durationMillis / 1000.0);
    }
}
