package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.fencer.client.FencedStore;
import io.fencer.client.Fencer;
import io.fencer.client.StaleWriteException;
import io.fencer.core.FencePolicy;
import io.fencer.core.FencingToken;
import io.fencer.server.FencerStoreServer;
import io.fencer.server.StoreServerConfig;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Java client reads a refusal from gRPC's standard error model alone: a real store server refuses a real
 * stale write, and a proxy between them ({@link DeprecatedErrorStrippingProxy}) drops everything sent for clients
 * of the previous release ({@code fencer-error-bin}, CallError's deprecated fields). The client still names the
 * presented and the accepted token, which only the detail carries: without it the refusal would be an
 * InternalException of status FAILED_PRECONDITION.
 */
class StandardErrorModelClientTest {
    private static final String A_TOKEN = new FencingToken("orders", 33).sequencer();
    private static final String B_TOKEN = new FencingToken("orders", 34).sequencer();

    @TempDir
    Path dataDir;
    private FencerStoreServer server;
    private DeprecatedErrorStrippingProxy proxy;
    private FencedStore store;

    @BeforeEach
    void startServer() throws Exception {
        server = FencerStoreServer.start(StoreServerConfig.defaults(dataDir).withPorts(0, 0));
    }

    @AfterEach
    void stop() throws Exception {
        if (store != null) {
            store.close();
        }
        if (proxy != null) {
            proxy.close();
        }
        server.close();
    }

    @Test
    void put_staleTokenAnsweredWithTheStandardTrailerAlone_throwsStaleWriteNamingBothTokens() throws Exception {
        connectThroughProxy(false); // no Pipeline: the client writes with unary calls

        StaleWriteException refused = staleWriteOfA();

        assertRefusedNamingBothTokens(refused);
        assertThat(proxy.pipelinesForwarded.get()).as("unary calls only").isZero();
        assertThat(proxy.deprecatedTrailersDropped.get()).as("the server sent fencer-error-bin, the proxy dropped it")
                .isEqualTo(1);
    }

    @Test
    void put_staleTokenOnThePipelineAnsweredWithCallErrorStatusAlone_throwsStaleWriteNamingBothTokens()
            throws Exception {
        connectThroughProxy(true);

        StaleWriteException refused = staleWriteOfA();

        assertRefusedNamingBothTokens(refused);
        assertThat(proxy.pipelinesForwarded.get()).as("the writes went on the Pipeline stream").isEqualTo(1);
        assertThat(proxy.deprecatedCallErrorsCleared.get())
                .as("the server filled CallError's deprecated fields, the proxy cleared them").isEqualTo(1);
    }

    private void connectThroughProxy(boolean servesPipeline) throws Exception {
        proxy = DeprecatedErrorStrippingProxy.start(server.port(), servesPipeline);
        store = Fencer.newStoreBuilder().endpoint(proxy.endpoint()).callTimeout(Duration.ofSeconds(20)).build();
    }

    /** The paused-client scenario at the store: B (token 34) writes, then A, paused past its lease, writes with 33. */
    private StaleWriteException staleWriteOfA() {
        store.put("orders", "order-17", "by B", B_TOKEN);
        StaleWriteException refused = catchThrowableOfType(StaleWriteException.class,
                () -> store.put("orders", "order-17", "by A", A_TOKEN));
        assertThat(refused).as("A's stale write must be refused as stale").isNotNull();
        return refused;
    }

    private void assertRefusedNamingBothTokens(StaleWriteException refused) {
        assertThat(refused.token()).isEqualTo(new FencingToken("orders", 33));
        assertThat(refused.acceptedToken()).isEqualTo(new FencingToken("orders", 34));
        assertThat(refused.policy()).isEqualTo(FencePolicy.AT_LEAST);
        assertThat(refused.retried()).isFalse();
        assertThat(store.get("orders", "order-17").valueUtf8()).isEqualTo("by B");
    }
}
