package io.fencer.server;

import io.fencer.api.v1.StoreGrpc;
import io.fencer.server.store.ReplicatedStore;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link StoreBadInputContract} on the replicated store of three peers in this JVM, started once for the class; each
 * test calls the leader of its start (a follower would answer NOT_LEADER before it checks anything).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class ReplicatedStoreBadInputTest extends StoreBadInputContract {
    @TempDir
    static Path dataRoot;
    private PeerGroup group;
    private String leader;

    @BeforeAll
    void start() throws Exception {
        group = new PeerGroup(dataRoot, 3, config -> config, false).startFounders();
    }

    @BeforeEach
    void findLeader() {
        leader = group.awaitLeader();
    }

    @AfterAll
    void stop() throws Exception {
        group.close();
    }

    @Override
    StoreGrpc.StoreBlockingStub store() {
        return StoreServiceTest.StoreTesting.stub(group.channel(leader));
    }

    @Override
    int batchBytesMax() {
        return ReplicatedStore.BATCH_BYTES_MAX; // one log entry's worth: the configured 4 MiB is capped to it
    }
}
