package io.fencer.server;

import io.fencer.api.v1.StoreGrpc;
import io.fencer.core.ManualTicker;
import io.fencer.store.StoreOptions;
import io.grpc.ManagedChannel;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/** {@link StoreBadInputContract} on the single-node store of one server, started once for the class. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class SingleNodeStoreBadInputTest extends StoreBadInputContract {
    @TempDir
    static Path dataDir;
    private FencerServer server;
    private ManagedChannel channel;

    @BeforeAll
    void start() throws Exception {
        server = FencerServer.start(TestServers.singlePeer(dataDir, new ManualTicker()));
        channel = TestServers.channel(server);
        TestServers.awaitServing(server, channel);
    }

    @AfterAll
    void stop() throws Exception {
        TestServers.close(channel);
        server.close();
    }

    @Override
    StoreGrpc.StoreBlockingStub store() {
        return StoreServiceTest.StoreTesting.stub(channel);
    }

    @Override
    int batchBytesMax() {
        return StoreOptions.defaults().batchBytesMax();
    }
}
