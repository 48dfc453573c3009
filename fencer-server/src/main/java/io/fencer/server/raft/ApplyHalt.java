package io.fencer.server.raft;

import java.util.Objects;

/**
 * Where and why this peer stopped applying the Raft log: applying the entry at {@link #index} failed for a reason
 * that is not the entry's (the state machine threw: a bug, a failed assertion, memory exhausted), so this peer cannot
 * know the state that entry leads to. It keeps its data directory untouched and serves no client until an operator
 * recovers it ({@link #RECOVERY}); see {@link RaftLockStateMachine} for how the halt holds.
 *
 * @param index the log index of the entry whose apply failed
 * @param term the term of that entry
 * @param reason what failed: the exception's type and message (never the entry's bytes), at most
 *     {@link #REASON_CHARS_MAX} characters
 */
public record ApplyHalt(long index, long term, String reason) {
    /** The longest reason kept: an exception's message may be long, a health body and an error message are not. */
    public static final int REASON_CHARS_MAX = 500;

    /** What an operator does about a halt, said in every message that names one. */
    public static final String RECOVERY = "the data directory is left as it was. To recover: if the other peers"
            + " applied this entry (their /healthz answers ok), stop this peer, empty its data directory and start it"
            + " again: it catches up from the leader's snapshot and log; if every peer halted at this index, upgrade to"
            + " a release that fixes the cause and start it on the same data directory";

    public ApplyHalt {
        Objects.requireNonNull(reason, "reason");
        if (reason.length() > REASON_CHARS_MAX) {
            reason = reason.substring(0, REASON_CHARS_MAX) + "...";
        }
    }

    /** Returns the halt of {@code cause} at an entry: its type's simple name and its message. */
    static ApplyHalt of(long index, long term, Throwable cause) {
        String message = cause.getMessage();
        return new ApplyHalt(index, term, cause.getClass().getSimpleName() + (message == null ? "" : ": " + message));
    }

    /** Returns the message every refused client call carries: the index, the reason and the recovery. */
    public String message() {
        return "this peer halted applying the Raft log at index " + index + " (term " + term + "): " + reason
                + "; it serves no calls until recovered: " + RECOVERY;
    }
}
