package io.fencer.server;

import static io.fencer.server.TestServers.acquire;
import static io.fencer.server.TestServers.describe;
import static io.fencer.server.TestServers.keepAliveOnce;
import static io.fencer.server.TestServers.openSession;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.fencer.api.v1.FencingToken;
import io.fencer.api.v1.KeepAliveResponse;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.core.ManualTicker;
import io.fencer.lock.SessionView;
import io.fencer.server.TestServers.TestSession;
import io.fencer.server.raft.RaftNode;
import io.grpc.ManagedChannel;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * What a restart gives sessions: their own ttl (+ the takeover bound B) at most, and a session that had used up most
 * of its lease only about what it had left, recorded by the leader as a lease bound; a keepalive clears the bound
 * before it is acknowledged, so a renewed session again gets its whole ttl. Driven by a manual ticker.
 */
class LeaseBoundTest {
    private static final long TTL_MILLIS = 60_000;
    private static final Duration WAIT_MAX = Duration.ofSeconds(30);

    @TempDir
    Path dataDir;
    private final ManualTicker ticker = new ManualTicker();
    private final AtomicInteger canaries = new AtomicInteger();
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

    /**
     * Before lease bounds, a restart 40 s into an abandoned 60 s session gave it 60 s more (+ B): 100 s in all, and
     * a restart every minute kept it for ever. Now it gets the 20 s it had left (+ B).
     */
    @Test
    void restart_ofAnAbandonedSession_givesWhatItHadLeftNotAFreshTtl() throws Exception {
        start();
        TestSession abandoned = openSession(stub, TTL_MILLIS);
        FencingToken held = acquire(stub, abandoned, "abandoned", 0).getToken();
        ticker.advance(Duration.ofSeconds(40)); // no keepalive: 20 s of its lease left, under half of its ttl
        SessionView bounded = awaitBound(abandoned.id());
        assertThat(bounded.leaseBoundMillis()).isBetween(19_000L, 20_000L);

        restart();
        String canary = canary();
        ticker.advance(Duration.ofSeconds(19));
        awaitExpired(canary);
        assertThat(describe(stub, "abandoned").getHolder()).as("within its bound").isEqualTo(held);
        ticker.advance(Duration.ofMillis(1_000 + RaftNode.takeoverBound().toMillis() + 1));

        await().atMost(WAIT_MAX).until(() -> !describe(stub, "abandoned").hasHolder());
        assertThat(keepAliveOnce(channel, abandoned).getExpired()).isTrue();
    }

    @Test
    void keepAlive_ofABoundedSession_clearsTheBoundFirstSoARestartGivesTheWholeTtlAgain() throws Exception {
        start();
        TestSession session = openSession(stub, TTL_MILLIS);
        FencingToken held = acquire(stub, session, "kept", 0).getToken();
        ticker.advance(Duration.ofSeconds(40));
        awaitBound(session.id());

        KeepAliveResponse renewed = keepAliveOnce(channel, session);
        assertThat(renewed.getExpired()).isFalse();
        assertThat(renewed.getTtlMillis()).isEqualTo(TTL_MILLIS);
        assertThat(server.session(session.id()).orElseThrow().leaseBoundMillis())
                .as("acknowledged only once the renewal is in the log").isEqualTo(-1);

        restart();
        String canary = canary();
        ticker.advance(Duration.ofSeconds(59));
        awaitExpired(canary);
        assertThat(describe(stub, "kept").getHolder()).as("a renewed session's whole ttl").isEqualTo(held);
    }

    @Test
    void keepAlive_everyThirdOfTheTtl_neverRecordsABound() throws Exception {
        start();
        TestSession session = openSession(stub, TTL_MILLIS);
        long appliedBefore = server.appliedIndex();

        for (int i = 0; i < 6; i++) {
            String canary = canary();
            ticker.advance(Duration.ofSeconds(20));
            awaitExpired(canary); // the keeper has scanned with the new time
            assertThat(keepAliveOnce(channel, session).getExpired()).isFalse();
        }

        assertThat(server.session(session.id()).orElseThrow().leaseBoundMillis()).isEqualTo(-1);
        // Six canaries, each an open, an acquire and an expiry: nothing else went into the log.
        assertThat(server.appliedIndex() - appliedBefore).isEqualTo(6 * 3);
    }

    private SessionView awaitBound(long sessionId) {
        await().atMost(WAIT_MAX).until(() -> server.session(sessionId).orElseThrow().leaseBoundMillis() >= 0);
        return server.session(sessionId).orElseThrow();
    }

    /** Opens a 1 s session holding a lock of its own; once it is free, the keeper has scanned with the new time. */
    private String canary() {
        String lock = "canary-" + canaries.incrementAndGet();
        acquire(stub, openSession(stub, 1_000), lock, 0);
        return lock;
    }

    private void awaitExpired(String canaryLock) {
        await().atMost(WAIT_MAX).until(() -> !describe(stub, canaryLock).hasHolder());
    }

    private void start() throws Exception {
        server = FencerServer.start(TestServers.singlePeer(dataDir, ticker));
        channel = TestServers.channel(server);
        stub = TestServers.stub(channel);
        TestServers.awaitServing(server, channel);
    }

    private void restart() throws Exception {
        TestServers.close(channel);
        server.close();
        start();
    }
}
