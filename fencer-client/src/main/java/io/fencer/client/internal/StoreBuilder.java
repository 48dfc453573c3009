package io.fencer.client.internal;

import io.fencer.client.FencedStore;
import io.fencer.client.FencerClient;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;

/** The settings of a {@link DefaultFencedStore}; validated as they are set, so mistakes point at their cause. */
final class StoreBuilder implements FencedStore.Builder {
    private String endpoint;
    private Duration callTimeout = ClientBuilder.CALL_TIMEOUT_DEFAULT;
    private Duration unreachableTimeout; // null: the call timeout
    private FencerClient lockService;
    private ClientTransport.TlsFiles tls;
    private boolean pipelining = Router.PIPELINING_DEFAULT;

    @Override
    public FencedStore.Builder endpoint(String endpoint) {
        StoreConnection.parseEndpoints(endpoint); // checked now, so a mistake points at its cause
        this.endpoint = endpoint;
        return this;
    }

    @Override
    public FencedStore.Builder lockService(FencerClient lockService) {
        this.lockService = Objects.requireNonNull(lockService, "lockService");
        return this;
    }

    @Override
    public FencedStore.Builder callTimeout(Duration timeout) {
        this.callTimeout = ClientBuilder.checkTimeout("call timeout", timeout);
        return this;
    }

    @Override
    public FencedStore.Builder unreachableTimeout(Duration timeout) {
        this.unreachableTimeout = ClientBuilder.checkTimeout("unreachable timeout", timeout);
        return this;
    }

    @Override
    public FencedStore.Builder tls(Path caFile, Path certificateFile, Path keyFile) {
        this.tls = new ClientTransport.TlsFiles(caFile, certificateFile, keyFile);
        return this;
    }

    @Override
    public FencedStore.Builder pipelining(boolean pipelining) {
        this.pipelining = pipelining;
        return this;
    }

    @Override
    public FencedStore build() {
        if (endpoint == null) {
            throw new IllegalArgumentException("the store's endpoint (host:port) is required");
        }
        return new DefaultFencedStore(endpoint, callTimeout,
                ClientBuilder.unreachableTimeout(unreachableTimeout, callTimeout), lockService, ClientTransport.of(tls),
                pipelining);
    }
}
