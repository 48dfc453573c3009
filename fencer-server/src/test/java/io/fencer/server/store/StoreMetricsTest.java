package io.fencer.server.store;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.core.FencePolicy;
import io.fencer.core.FencingToken;
import io.fencer.core.ScopeMismatchException;
import io.fencer.core.StaleTokenException;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

/** The refusal counters of the store: by scope and reason, their scope tags bounded. */
class StoreMetricsTest {
    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    private final StoreMetrics metrics = new StoreMetrics(registry, io.fencer.core.Ticker.system());

    @Test
    void recordWrite_refusals_countedByScopeAndReason() {
        metrics.recordWrite("orders", System.nanoTime(), new StaleTokenException("orders", 3, 4, FencePolicy.AT_LEAST));
        metrics.recordWrite("orders", System.nanoTime(), new StaleTokenException("orders", 2, 4, FencePolicy.AT_LEAST));
        metrics.recordWrite("orders", System.nanoTime(), new IllegalStateException("a bug"));
        metrics.recordWrite("orders", System.nanoTime(), null);

        assertThat(refusals("orders", "stale_token")).isEqualTo(2);
        assertThat(refusals("orders", "internal")).isEqualTo(1);
        assertThat(registry.find("fencer.store.refusals").counters()).hasSize(2);
    }

    @Test
    void recordWrite_pastTheScopesTaggedMaxOrAnInvalidName_countsUnderTheBoundedStandIns() {
        for (int i = 0; i < StoreMetrics.SCOPES_TAGGED_MAX + 5; i++) {
            metrics.recordWrite("scope-" + i, System.nanoTime(), new ScopeMismatchException("scope-" + i, new FencingToken("other", 1)));
        }
        metrics.recordWrite("x".repeat(300), System.nanoTime(), new IllegalArgumentException("too long"));

        assertThat(refusals("scope-0", "scope_mismatch")).isEqualTo(1);
        assertThat(refusals(StoreMetrics.OTHER_SCOPES, "scope_mismatch")).isEqualTo(5);
        assertThat(refusals(StoreMetrics.INVALID_SCOPE, "internal")).isEqualTo(1);
        assertThat(registry.find("fencer.store.refusals").counters()).hasSize(StoreMetrics.SCOPES_TAGGED_MAX + 2);
    }

    private double refusals(String scope, String reason) {
        return registry.get("fencer.store.refusals").tag("scope", scope).tag("reason", reason).counter().count();
    }
}
