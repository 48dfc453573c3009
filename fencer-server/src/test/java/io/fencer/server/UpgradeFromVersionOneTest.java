package io.fencer.server;

import static io.fencer.server.TestServers.acquire;
import static io.fencer.server.TestServers.describe;
import static io.fencer.server.TestServers.keepAliveOnce;
import static io.fencer.server.TestServers.openSession;
import static io.fencer.server.TestServers.waiterSessions;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.common.util.concurrent.ListenableFuture;
import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.KeepAliveResponse;
import io.fencer.api.v1.LockInfo;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.Reason;
import io.fencer.api.v1.ValidateRequest;
import io.fencer.api.v1.ValidateResponse;
import io.fencer.core.ManualTicker;
import io.fencer.server.TestServers.TestSession;
import io.fencer.server.raft.RaftNode;
import io.grpc.ManagedChannel;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A server started on a data directory written by the previous release (before session secrets) loads it and goes
 * on issuing higher tokens. {@code v1/data-dir.tar.gz} is that release's real data directory (its Raft log of
 * version-1 command batches), made with its own jar:
 * {@code fencer server --data DIR --port P --no-store --admin-port -1}, then {@code fencer lock exec jobs/upgrade
 * -- true} three times (tokens 1 to 3), then {@code fencer lock acquire --ttl 5s jobs/upgrade} (token 4, session 4),
 * then {@code kill -9} of the server while session 4 held the lock, and {@code tar czf} of DIR without
 * {@code in_use.lock}.
 */
class UpgradeFromVersionOneTest {
    private static final String LOCK = "jobs/upgrade";
    /** The lease the previous release's {@code lock acquire --ttl 5s} opened session 4 with. */
    private static final long OLD_TTL_MILLIS = 5_000;
    private static final long OLD_HOLDER_SESSION = 4;
    private static final long OLD_TOKEN = 4;
    private static final long OLD_FLOOR = 3;
    private static final Duration WAIT_MAX = Duration.ofSeconds(30);

    @TempDir
    Path directory;
    private final ManualTicker ticker = new ManualTicker();
    private FencerServer server;
    private ManagedChannel channel;
    private LocksGrpc.LocksBlockingStub stub;

    @AfterEach
    void stop() throws Exception {
        if (channel != null) {
            TestServers.close(channel);
        }
        if (server != null) {
            server.close();
        }
    }

    @Test
    void start_onVersionOneDataDirectory_keepsTheOldHolderUntilItExpiresThenGrantsAHigherToken() throws Exception {
        Path dataDir = extractOldDataDirectory();
        server = FencerServer.start(TestServers.singlePeer(dataDir, ticker));
        channel = TestServers.channel(server);
        stub = TestServers.stub(channel);
        TestServers.awaitServing(server, channel);

        LockInfo old = describe(stub, LOCK);
        assertThat(old.getHolder().getValue()).isEqualTo(OLD_TOKEN);
        assertThat(old.getLastToken()).isEqualTo(OLD_TOKEN);
        assertThat(old.getHolderIdentity()).isEqualTo("anonymous");
        // Nobody can keep the old session alive: it has no secret, and none matches.
        KeepAliveResponse refused = keepAliveOnce(channel, new TestSession(OLD_HOLDER_SESSION, "any secret"));
        assertThat(refused.getTtlMillis()).as("nothing renewed").isZero();
        assertThat(refused.getError().getDetail().getReason()).isEqualTo(Reason.REASON_SESSION_UNAUTHENTICATED);

        TestSession next = openSession(stub, 3_600_000);
        assertThat(next.id()).as("session ids go on after the old release's").isGreaterThan(OLD_HOLDER_SESSION);
        ListenableFuture<AcquireResponse> waiting = LocksGrpc.newFutureStub(channel)
                .withDeadlineAfter(60, TimeUnit.SECONDS)
                .acquire(TestServers.acquireRequest(next, LOCK, "after-upgrade", 45_000));
        await().atMost(WAIT_MAX).until(() -> waiterSessions(stub, LOCK).contains(next.id()));

        // Past the restart grace: now + ttl + the takeover bound B.
        ticker.advance(Duration.ofMillis(OLD_TTL_MILLIS + 1).plus(RaftNode.takeoverBound()));

        AcquireResponse granted = waiting.get(30, TimeUnit.SECONDS);
        assertThat(granted.getAcquired()).isTrue();
        assertThat(granted.getToken().getValue()).isEqualTo(OLD_TOKEN + 1);
        ValidateResponse validated = stub.validate(ValidateRequest.newBuilder().setToken(old.getHolder()).build());
        assertThat(validated.getStatus()).isEqualTo(ValidateResponse.Status.SUPERSEDED);
        assertThat(describe(stub, LOCK).getHolder()).isEqualTo(granted.getToken());
        // Each of the old release's first three grants was released with nobody waiting, so its record was dropped
        // and the floor raised to 3: a lock it never used starts above that.
        assertThat(acquire(stub, next, "jobs/other", 0).getToken().getValue()).isEqualTo(OLD_FLOOR + 1);
    }

    /** Unpacks the previous release's data directory; returns the {@code --data} directory it ran with. */
    private Path extractOldDataDirectory() throws IOException, InterruptedException {
        Path archive = directory.resolve("data-dir.tar.gz");
        try (InputStream in = UpgradeFromVersionOneTest.class.getResourceAsStream("/v1/data-dir.tar.gz")) {
            assertThat(in).as("test resource v1/data-dir.tar.gz").isNotNull();
            Files.copy(in, archive);
        }
        Process tar = new ProcessBuilder("tar", "xzf", archive.toString(), "-C", directory.toString())
                .redirectErrorStream(true).start();
        String output = new String(tar.getInputStream().readAllBytes());
        assertThat(tar.waitFor(30, TimeUnit.SECONDS)).as("tar finished").isTrue();
        assertThat(tar.exitValue()).as("tar: " + output).isZero();
        return directory.resolve("data");
    }
}
