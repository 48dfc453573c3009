package io.fencer.client.internal;

import io.fencer.client.FencerClient;

/** The gRPC implementation of {@link FencerClient}. Not public API. */
public final class DefaultFencerClient {
    private DefaultFencerClient() {}

    public static FencerClient.Builder newBuilder() {
        throw new UnsupportedOperationException("not yet");
    }
}
