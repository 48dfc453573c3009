package io.fencer.chaos.check;

import java.util.Objects;

/**
 * One thing the checker found wrong in a history.
 *
 * @param check the check that found it (one of {@link CheckResult#CHECKS})
 * @param timeMicros when, on the history's clock (the completion of the operation at fault; 0 when the violation
 *     concerns the final state as a whole)
 * @param process the process whose operation is at fault, or {@code final}
 * @param token the token of the operation at fault (0 when none)
 * @param description one sentence naming the values, e.g. {@code "write of 41 under token 17 applied at revision
 *     40 after a write under token 18 (revision 39)"}
 */
public record Violation(String check, long timeMicros, String process, long token, String description) {
    public Violation {
        Objects.requireNonNull(check, "check");
        Objects.requireNonNull(process, "process");
        Objects.requireNonNull(description, "description");
    }
}
