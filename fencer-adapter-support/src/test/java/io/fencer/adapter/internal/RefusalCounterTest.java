package io.fencer.adapter.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;

import io.fencer.core.FencePolicy;
import io.fencer.core.FencingToken;
import io.fencer.core.LockMode;
import io.fencer.core.ModeMismatchException;
import io.fencer.core.ScopeMismatchException;
import io.fencer.core.StaleTokenException;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

class RefusalCounterTest {
    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();

    @Test
    void refused_refusalsAtTwoScopesForThreeReasons_countsEachScopeAndReasonApart() {
        RefusalCounter counter = new RefusalCounter(registry, "jdbc");

        counter.refused("orders", new StaleTokenException("orders", 3, 5, FencePolicy.AT_LEAST));
        counter.refused("orders", new StaleTokenException("orders", 4, 5, FencePolicy.AT_LEAST));
        counter.refused("orders", new ScopeMismatchException("orders", new FencingToken("invoices", 7)));
        counter.refused("invoices", new ModeMismatchException("invoices", 9, LockMode.SHARED));

        assertThat(count("jdbc", "orders", "stale_token")).isEqualTo(2.0);
        assertThat(count("jdbc", "orders", "scope_mismatch")).isEqualTo(1.0);
        assertThat(count("jdbc", "invoices", "mode_mismatch")).isEqualTo(1.0);
        assertThat(registry.find(RefusalCounter.METER_NAME).counters()).hasSize(3);
    }

    @Test
    void refused_anyRefusal_returnsTheSameExceptionToThrow() {
        StaleTokenException stale = new StaleTokenException("orders", 3, 5, FencePolicy.STRICT);

        StaleTokenException returned = new RefusalCounter(registry, "redis").refused("orders", stale);

        assertThat(returned).isSameAs(stale);
        assertThat(count("redis", "orders", "stale_token")).isEqualTo(1.0);
    }

    @Test
    void count_moreScopesThanTheBound_laterScopesCountAsOtherAndEarlierKeepTheirSeries() {
        RefusalCounter counter = new RefusalCounter(registry, "kafka");
        for (int i = 0; i < RefusalCounter.SCOPES_TAGGED_MAX; i++) {
            counter.count("topic-" + i, "unstamped");
        }

        counter.count("topic-late-1", "unstamped");
        counter.count("topic-late-2", "unstamped");
        counter.count("topic-0", "unstamped");

        assertThat(count("kafka", RefusalCounter.OTHER_SCOPES, "unstamped")).isEqualTo(2.0);
        assertThat(count("kafka", "topic-0", "unstamped")).isEqualTo(2.0);
        assertThat(registry.find(RefusalCounter.METER_NAME).tag("scope", "topic-late-1").counter()).isNull();
        assertThat(registry.find(RefusalCounter.METER_NAME).counters())
                .hasSize(RefusalCounter.SCOPES_TAGGED_MAX + 1);
    }

    @Test
    void refused_nullRegistry_countsNothingAndReturnsTheRefusal() {
        RefusalCounter counter = new RefusalCounter(null, "files");
        StaleTokenException stale = new StaleTokenException("reports", 1, 2, FencePolicy.AT_LEAST);

        assertThatCode(() -> assertThat(counter.refused("reports", stale)).isSameAs(stale)).doesNotThrowAnyException();
        assertThatCode(() -> counter.count("reports", "stale_token")).doesNotThrowAnyException();
    }

    private double count(String adapter, String scope, String reason) {
        Counter counter = registry.get(RefusalCounter.METER_NAME).tags("adapter", adapter, "scope", scope, "reason",
                reason).counter();
        return counter.count();
    }
}
