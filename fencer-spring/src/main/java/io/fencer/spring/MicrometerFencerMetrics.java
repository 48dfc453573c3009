package io.fencer.spring;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.EnumMap;
import java.util.Map;

/** {@link FencerMetrics} as Micrometer counters, every one registered up front so dashboards see zeros. */
final class MicrometerFencerMetrics implements FencerMetrics {
    static final String ACQUIRES = "fencer.acquires";
    static final String LEASE_LOSSES = "fencer.lease.losses";
    static final String STALE_REFUSALS = "fencer.stale.refusals";

    private final Map<Component, Map<Outcome, Counter>> acquires = new EnumMap<>(Component.class);
    private final Map<Component, Counter> leaseLosses = new EnumMap<>(Component.class);
    private final Counter staleRefusals;

    MicrometerFencerMetrics(MeterRegistry registry) {
        for (Component component : Component.values()) {
            Map<Outcome, Counter> outcomes = new EnumMap<>(Outcome.class);
            for (Outcome outcome : Outcome.values()) {
                outcomes.put(outcome, Counter.builder(ACQUIRES).description("attempts to take a Fencer lock")
                        .tag("component", component.tag()).tag("outcome", outcome.tag()).register(registry));
            }
            acquires.put(component, outcomes);
            leaseLosses.put(component, Counter.builder(LEASE_LOSSES)
                    .description("Fencer locks whose session was lost while held")
                    .tag("component", component.tag()).register(registry));
        }
        staleRefusals = Counter.builder(STALE_REFUSALS)
                .description("fencing tokens the JDBC fence refused; their transactions were rolled back")
                .register(registry);
    }

    @Override
    public void acquire(Component component, Outcome outcome) {
        acquires.get(component).get(outcome).increment();
    }

    @Override
    public void leaseLost(Component component) {
        leaseLosses.get(component).increment();
    }

    @Override
    public void staleRefused() {
        staleRefusals.increment();
    }
}
