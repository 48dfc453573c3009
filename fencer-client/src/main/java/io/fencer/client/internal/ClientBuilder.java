package io.fencer.client.internal;

import io.fencer.client.FencerClient;
import io.fencer.core.Ticker;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/** The settings of a {@link DefaultFencerClient}; validated as they are set, so mistakes point at their cause. */
final class ClientBuilder implements FencerClient.Builder {
    static final Duration CALL_TIMEOUT_DEFAULT = Duration.ofSeconds(10);
    static final Duration CALL_TIMEOUT_MAX = Duration.ofHours(1);

    private final List<String> endpoints = new ArrayList<>();
    private Duration callTimeout = CALL_TIMEOUT_DEFAULT;
    private Duration unreachableTimeout; // null: the call timeout
    private Ticker ticker = Ticker.system();
    private ClientTransport.TlsFiles tls;
    private boolean pipelining = Router.PIPELINING_DEFAULT;

    @Override
    public FencerClient.Builder endpoints(String... endpoints) {
        Objects.requireNonNull(endpoints, "endpoints");
        List<String> checked = new ArrayList<>();
        for (String endpoint : endpoints) {
            checked.add(Router.checkEndpoint(endpoint));
        }
        this.endpoints.clear();
        this.endpoints.addAll(checked);
        return this;
    }

    @Override
    public FencerClient.Builder callTimeout(Duration timeout) {
        this.callTimeout = checkTimeout("call timeout", timeout);
        return this;
    }

    @Override
    public FencerClient.Builder unreachableTimeout(Duration timeout) {
        this.unreachableTimeout = checkTimeout("unreachable timeout", timeout);
        return this;
    }

    /** Returns {@code timeout} when it is positive and at most {@link #CALL_TIMEOUT_MAX}. */
    static Duration checkTimeout(String what, Duration timeout) {
        Objects.requireNonNull(timeout, what);
        if (timeout.isNegative() || timeout.isZero() || timeout.compareTo(CALL_TIMEOUT_MAX) > 0) {
            throw new IllegalArgumentException(what + " must be positive and at most " + CALL_TIMEOUT_MAX
                    + ", got " + timeout);
        }
        return timeout;
    }

    /** Returns the unreachable timeout in effect: the one set, but never more than the call timeout. */
    static Duration unreachableTimeout(Duration set, Duration callTimeout) {
        return set == null || set.compareTo(callTimeout) > 0 ? callTimeout : set;
    }

    @Override
    public FencerClient.Builder ticker(Ticker ticker) {
        this.ticker = Objects.requireNonNull(ticker, "ticker");
        return this;
    }

    @Override
    public FencerClient.Builder tls(Path caFile, Path certificateFile, Path keyFile) {
        this.tls = new ClientTransport.TlsFiles(caFile, certificateFile, keyFile);
        return this;
    }

    @Override
    public FencerClient.Builder pipelining(boolean pipelining) {
        this.pipelining = pipelining;
        return this;
    }

    @Override
    public FencerClient build() {
        if (endpoints.isEmpty()) {
            throw new IllegalArgumentException("at least one endpoint (host:port) is required");
        }
        return new DefaultFencerClient(endpoints, callTimeout, unreachableTimeout(unreachableTimeout, callTimeout),
                ticker, ClientTransport.of(tls), pipelining);
    }
}
