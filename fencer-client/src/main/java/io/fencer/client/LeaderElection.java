package io.fencer.client;

import io.fencer.core.FencingToken;
import java.time.Duration;
import java.util.Optional;

/**
 * A leader election over one lock: the leader is the lock's holder, and its term's epoch is the grant's
 * fencing token, so every action a leader takes can be fenced by its epoch.
 */
public interface LeaderElection {

    /** Returns the election's name (its lock's name). */
    String name();

    /**
     * Campaigns until elected or {@code wait} passes.
     *
     * @throws LockTimeoutException when not elected within {@code wait}
     */
    Leadership campaign(Duration wait);

    /** Becomes leader if nobody is; otherwise returns empty. */
    Optional<Leadership> tryCampaign();

    /** Returns the current leader's term, or empty when there is none. */
    Optional<LockStatus> leader();

    /**
     * Observes the election: {@code leader} receives the current leader's term (its epoch token, unsigned) or empty
     * when there is none, first as it is now, then at each change, until the returned watch is closed.
     */
    Watch observe(java.util.function.Consumer<Optional<FencingToken>> leader);
}
