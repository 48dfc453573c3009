package io.fencer.chaos.workload;

import io.fencer.core.FencingToken;
import java.util.HashMap;
import java.util.Map;
import java.util.OptionalLong;
import java.util.function.Function;

/**
 * The tokens a control worker (fencing off) writes with: one a scope, the scope's accepted token, so that the store
 * orders nothing and a stale holder's write lands, as with a lease alone.
 *
 * <p>Why not a constant 1: a store hosted by {@code fencer server} lets a scope's first write come only under the
 * lock's current grant. A constant 1 created the scope only when the lock's first holder wrote first; when that write
 * was lost (its store leader killed, a slow start), every later write of the run was refused as superseded, and the
 * control, finding no lost update, failed its test. So the first write uses the writer's own grant, which is current
 * while it holds the lock, and every later one the token the scope accepted.
 */
final class ControlTokens {
    /** Reads a scope's accepted token: empty when the scope does not exist yet. */
    private final Function<String, OptionalLong> accepted;
    private final Map<String, Long> known = new HashMap<>();

    ControlTokens(Function<String, OptionalLong> accepted) {
        this.accepted = accepted;
    }

    /** Returns the sequencer of the control's write to {@code scope} under {@code grant} (whose lock is the scope). */
    String sequencer(String scope, FencingToken grant) {
        Long token = known.get(scope);
        if (token == null) {
            OptionalLong held = accepted.apply(scope);
            if (held.isEmpty()) {
                return grant.sequencer(); // the scope's first write: under the lock's current grant
            }
            token = held.getAsLong();
            known.put(scope, token);
        }
        return new FencingToken(scope, token).sequencer();
    }

    /** Forgets the scope's token after a refusal: another worker's first write may have raised it meanwhile. */
    void refused(String scope) {
        known.remove(scope);
    }
}
