package io.fencer.spring;

import io.fencer.client.FencerClient;

/**
 * Adjusts the builder of the auto-configured {@link FencerClient} after the {@code fencer.*} properties were applied:
 * declare beans of this type to set what properties do not cover, such as the {@link io.fencer.core.Ticker}.
 */
@FunctionalInterface
public interface FencerClientCustomizer {
    /** Adjusts {@code builder}, which already carries the endpoints, the call timeout and TLS. */
    void customize(FencerClient.Builder builder);
}
