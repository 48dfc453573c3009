package io.fencer.spring;

import io.fencer.client.FencerClient;
import io.fencer.client.Session;
import io.fencer.client.SessionLoss;
import io.fencer.core.PermissionDeniedException;
import java.time.Duration;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.boot.actuate.health.Health;
import org.springframework.boot.actuate.health.HealthIndicator;

/**
 * The {@code fencer} health of an application: UP while the leader answers and a session of this client is kept
 * alive, DOWN otherwise.
 *
 * <p>Each check reads one lock's status (answered by the leader only, so an answer means a leader is reachable)
 * and looks at a probe session the indicator keeps open with the {@code fencer.session-ttl} lease: its keepalives
 * travel the same stream as the application's. A probe session found lost (its keepalives went unanswered, or the
 * service expired it) is reopened; the check is DOWN if that fails and UP otherwise, with the loss in its
 * details. A check against an unreachable group takes up to {@code fencer.call-timeout}.
 */
final class FencerHealthIndicator implements HealthIndicator, DisposableBean {
    /** The lock whose status the check reads; it is never taken. */
    static final String PROBE_LOCK = "fencer-spring-health";

    private final FencerClient client;
    private final Duration sessionTtl;
    private Session probe; // guarded by this
    private SessionLoss lastLoss; // guarded by this

    FencerHealthIndicator(FencerClient client, Duration sessionTtl) {
        this.client = client;
        this.sessionTtl = sessionTtl;
    }

    @Override
    public synchronized Health health() {
        try {
            client.describe(PROBE_LOCK);
        } catch (PermissionDeniedException answered) {
            // The leader answered; this identity may just not read lock status (its ACL grants lock only).
        } catch (RuntimeException unreachable) {
            return Health.down().withDetail("leader", "unreachable").withDetail("error", describe(unreachable))
                    .withDetail("session", probe != null && probe.isAlive() ? "alive" : "lost").build();
        }
        Health.Builder health = Health.up().withDetail("leader", "reachable");
        if (probe == null || !probe.isAlive()) {
            if (probe != null) {
                lastLoss = probe.ended().toCompletableFuture().getNow(null);
            }
            try {
                probe = client.openSession(sessionTtl);
            } catch (RuntimeException e) {
                probe = null;
                return Health.down().withDetail("leader", "reachable").withDetail("session", "cannot be opened")
                        .withDetail("error", describe(e)).build();
            }
        }
        health.withDetail("session", "alive").withDetail("sessionId", probe.id())
                .withDetail("leaseRemainingMillis", probe.leaseRemaining().toMillis());
        if (lastLoss != null) {
            health.withDetail("lastSessionLoss", lastLoss.cause() + ": " + lastLoss.detail());
        }
        return health.build();
    }

    private static String describe(RuntimeException e) {
        return e.getClass().getSimpleName() + ": " + e.getMessage();
    }

    @Override
    public synchronized void destroy() {
        if (probe != null) {
            probe.close();
        }
    }
}
