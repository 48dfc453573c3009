package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.GrantLoss;
import io.fencer.client.Session;
import io.fencer.core.LockMode;
import io.fencer.testing.FencerTestServer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A reader's grant lost with its session names the token it was granted, shared mode and all: the session once rebuilt
 * a lost grant's token from its lock and value alone, which named an exclusive token.
 */
class SharedGrantLossTest {
    private static final Duration TTL = Duration.ofSeconds(3);

    @TempDir
    Path dataDir;

    @Test
    void lost_sharedGrantWhoseSessionIsLost_namesTheSharedToken() throws Exception {
        FencerTestServer server = FencerTestServer.builder(dataDir).start();
        try (FencerClient client = Fencer.newBuilder().endpoints(server.endpoint())
                .callTimeout(Duration.ofSeconds(2)).build()) {
            Session reader = client.openSession(TTL);
            Grant grant = reader.lock("reports").acquireShared(Duration.ofSeconds(10));
            assertThat(grant.token().mode()).isEqualTo(LockMode.SHARED);

            server.close(); // no keepalive is answered: the session is lost within its ttl
            GrantLoss loss = grant.lost().toCompletableFuture().get(TTL.toSeconds() + 20, TimeUnit.SECONDS);

            assertThat(loss.cause()).isEqualTo(GrantLoss.Cause.SESSION_LOST);
            assertThat(loss.token()).isEqualTo(grant.token());
        } finally {
            server.close();
        }
    }
}
