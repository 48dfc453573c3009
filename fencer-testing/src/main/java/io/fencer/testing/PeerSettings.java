package io.fencer.testing;

import io.fencer.core.Ticker;
import io.fencer.server.ServerConfig;
import io.fencer.server.tls.TlsFiles;
import java.nio.file.Path;
import java.util.Objects;
import java.util.function.UnaryOperator;

/** What the builders of {@link FencerTestServer} and {@link FencerTestCluster} both set on every peer's config. */
final class PeerSettings {
    private TlsFiles tls;
    private Path acl;
    private Ticker ticker;
    private UnaryOperator<ServerConfig> customiser = UnaryOperator.identity();

    void tls(TlsFiles tls) {
        this.tls = Objects.requireNonNull(tls, "tls");
    }

    void acl(Path acl) {
        this.acl = Objects.requireNonNull(acl, "acl");
    }

    void ticker(Ticker ticker) {
        this.ticker = Objects.requireNonNull(ticker, "ticker");
    }

    void customiser(UnaryOperator<ServerConfig> customiser) {
        this.customiser = Objects.requireNonNull(customiser, "customiser");
    }

    /**
     * Returns a config maker for {@code base} (a peer's ports, peers and secret set): TLS, ACL and ticker as set now,
     * then the customiser, at each call. Later changes to this object do not reach it.
     */
    InProcessPeer peer(ServerConfig base) {
        ServerConfig config = ticker == null ? base : base.withTicker(ticker);
        config = tls == null ? config : config.withTls(tls);
        ServerConfig settled = acl == null ? config : config.withAcl(acl);
        UnaryOperator<ServerConfig> custom = customiser;
        return new InProcessPeer(() -> custom.apply(settled));
    }
}
