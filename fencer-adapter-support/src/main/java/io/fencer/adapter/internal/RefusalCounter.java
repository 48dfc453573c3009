package io.fencer.adapter.internal;

import io.fencer.core.FencerException;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Counts a resource adapter's refusals into the user's Micrometer registry, when one is given, as
 * {@code fencer_adapter_refusals_total{adapter, scope, reason}}: the same reasons as the store's
 * {@code fencer_store_refusals_total} (the error catalogue's reason in lower case: {@code stale_token},
 * {@code scope_mismatch}, {@code mode_mismatch} ...). The scope tag is bounded: the first {@link #SCOPES_TAGGED_MAX}
 * scopes refused keep a series each, later ones count as {@value #OTHER_SCOPES}, so that many scopes cannot grow the
 * registry without end. Thread-safe.
 *
 * <p>Internal: the resource adapters (fencer-jdbc, fencer-redis, fencer-files, fencer-kafka, fencer-s3) share it
 * from this module, which is why it is public; it is not API and may change without notice. Applications see only
 * the meter it counts.
 */
public final class RefusalCounter {
    /** The most scopes with a refusal series of their own, as the store's. */
    static final int SCOPES_TAGGED_MAX = 1_000;
    /** The scope tag of every refusal past the first {@link #SCOPES_TAGGED_MAX} scopes. */
    static final String OTHER_SCOPES = "_other";
    /** The meter's name, which a Prometheus registry exports as {@code fencer_adapter_refusals_total}. */
    static final String METER_NAME = "fencer.adapter.refusals";

    private final MeterRegistry registry;
    private final String adapter;
    private final Set<String> scopesTagged = ConcurrentHashMap.newKeySet();

    /** Counts into {@code registry} under {@code adapter=<adapter>}; a null registry counts nothing. */
    public RefusalCounter(MeterRegistry registry, String adapter) {
        this.registry = registry;
        this.adapter = adapter;
    }

    /** Counts {@code refusal} of a token at {@code scope} and returns it, to be thrown. */
    public <E extends FencerException> E refused(String scope, E refusal) {
        count(scope, refusal.reason().name().toLowerCase(Locale.ROOT));
        return refusal;
    }

    /** Counts one refusal at {@code scope} for {@code reason}, a lower-case word of a fixed set. */
    public void count(String scope, String reason) {
        if (registry != null) {
            Counter.builder(METER_NAME).description("Writes refused by a resource adapter, by scope and reason")
                    .tag("adapter", adapter).tag("scope", scopeTag(scope)).tag("reason", reason).register(registry)
                    .increment();
        }
    }

    private String scopeTag(String scope) {
        if (scopesTagged.contains(scope)) {
            return scope;
        }
        synchronized (scopesTagged) {
            if (scopesTagged.size() >= SCOPES_TAGGED_MAX) {
                return OTHER_SCOPES;
            }
            scopesTagged.add(scope);
            return scope;
        }
    }
}
