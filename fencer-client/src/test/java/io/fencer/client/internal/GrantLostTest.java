package io.fencer.client.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.fencer.api.v1.RevokedGrant;
import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.GrantLoss;
import io.fencer.client.Session;
import io.fencer.core.ManualTicker;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** A grant learns that it is lost: revoked (named by a keepalive answer) or with its session; never when released. */
class GrantLostTest {
    private static final Duration TTL = Duration.ofSeconds(3); // keepalive interval: 1 s of ticker time
    private static final Duration PATIENCE = Duration.ofSeconds(20);

    private final ManualTicker ticker = new ManualTicker();
    private final FakeServer server = FakeServer.start();
    private FencerClient client;

    @AfterEach
    void tearDown() {
        if (client != null) {
            client.close();
        }
        server.close();
    }

    private Session openSession() {
        client = Fencer.newBuilder().endpoints(server.endpoint()).ticker(ticker).callTimeout(Duration.ofSeconds(5))
                .build();
        return client.openSession(TTL);
    }

    private static RevokedGrant revoked(Grant grant, String by) {
        return RevokedGrant.newBuilder().setToken(FakeLocks.token(grant.token().lock(), grant.token().value()))
                .setRevokedBy(by).build();
    }

    @Test
    void lost_keepAliveNamesTheGrantRevoked_completesRevokedNamingTheRevokerAndLeavesTheOtherGrant() {
        Session session = openSession();
        Grant orders = session.lock("orders").acquire(PATIENCE);
        Grant invoices = session.lock("invoices").acquire(PATIENCE);
        server.locks.revokedInKeepAlives = List.of(revoked(orders, "alice"));

        ticker.set(Duration.ofSeconds(1)); // the next keepalive goes out, and its answer names the revocation
        await().atMost(PATIENCE).until(() -> orders.lost().toCompletableFuture().isDone());

        GrantLoss loss = orders.lost().toCompletableFuture().join();
        assertThat(loss.cause()).isEqualTo(GrantLoss.Cause.REVOKED);
        assertThat(loss.token()).isEqualTo(orders.token());
        assertThat(loss.revokedBy()).isEqualTo("alice");
        assertThat(loss.detail()).contains(orders.token().toString()).contains("revoked by 'alice'");
        assertThat(invoices.lost().toCompletableFuture()).as("another grant of the session").isNotDone();
        assertThat(session.isAlive()).as("the session stays open").isTrue();

        long releasesBefore = server.locks.count("Release");
        orders.close();
        assertThat(server.locks.count("Release")).as("a revoked grant has nothing to release")
                .isEqualTo(releasesBefore);
    }

    @Test
    void lost_sessionExpires_completesSessionLost() {
        Session session = openSession();
        Grant orders = session.lock("orders").acquire(PATIENCE);
        server.locks.keepAliveMode = FakeLocks.KeepAliveMode.EXPIRE;

        ticker.set(Duration.ofSeconds(1));
        await().atMost(PATIENCE).until(() -> orders.lost().toCompletableFuture().isDone());

        GrantLoss loss = orders.lost().toCompletableFuture().join();
        assertThat(loss.cause()).isEqualTo(GrantLoss.Cause.SESSION_LOST);
        assertThat(loss.revokedBy()).isNull();
        assertThat(loss.detail()).contains("EXPIRED");
    }

    /** The holder acquiring again gets the same token: each grant it was handed learns of the loss, not the last. */
    @Test
    void lost_lockAcquiredTwiceThenSessionExpires_completesBothGrants() {
        Session session = openSession();
        Grant first = session.lock("orders").acquire(PATIENCE);
        Grant again = session.lock("orders").acquire(PATIENCE);
        assertThat(again.token()).isEqualTo(first.token());
        server.locks.keepAliveMode = FakeLocks.KeepAliveMode.EXPIRE;

        ticker.set(Duration.ofSeconds(1));
        await().atMost(PATIENCE).until(() -> again.lost().toCompletableFuture().isDone());

        await().atMost(PATIENCE).until(() -> first.lost().toCompletableFuture().isDone());
        assertThat(first.lost().toCompletableFuture().join().cause()).isEqualTo(GrantLoss.Cause.SESSION_LOST);
    }

    @Test
    void lost_lockAcquiredTwiceThenRevoked_completesBothGrants() {
        Session session = openSession();
        Grant first = session.lock("orders").acquire(PATIENCE);
        Grant again = session.lock("orders").acquire(PATIENCE);
        server.locks.revokedInKeepAlives = List.of(revoked(first, "alice"));

        ticker.set(Duration.ofSeconds(1));
        await().atMost(PATIENCE).until(() -> again.lost().toCompletableFuture().isDone());

        await().atMost(PATIENCE).until(() -> first.lost().toCompletableFuture().isDone());
        assertThat(first.lost().toCompletableFuture().join().revokedBy()).isEqualTo("alice");
    }

    @Test
    void lost_grantReleasedThenSessionExpires_neverCompletes() {
        Session session = openSession();
        Grant orders = session.lock("orders").acquire(PATIENCE);
        orders.close();
        server.locks.keepAliveMode = FakeLocks.KeepAliveMode.EXPIRE;

        ticker.set(Duration.ofSeconds(1));
        await().atMost(PATIENCE).until(() -> session.lost().toCompletableFuture().isDone());

        CompletableFuture<GrantLoss> lost = orders.lost().toCompletableFuture();
        assertThat(lost).as("a released grant is not lost").isNotDone();
    }

    /**
     * A holder acquiring its lock again and again without releasing each grant object keeps one entry in its
     * session, not one an acquire (tracking grants one entry an object once grew without bound), and every object
     * still learns of the loss.
     */
    @Test
    void track_lockAcquiredManyTimesWithoutRelease_keepsOneEntryAndTellsEveryGrant() {
        Session session = openSession();
        Grant first = session.lock("orders").acquire(PATIENCE);
        Grant last = first;
        for (int i = 0; i < 200; i++) {
            last = session.lock("orders").acquire(PATIENCE);
        }
        assertThat(((DefaultSession) session).grantsTracked()).isEqualTo(1);
        server.locks.keepAliveMode = FakeLocks.KeepAliveMode.EXPIRE;

        ticker.set(Duration.ofSeconds(1));
        Grant lastGrant = last;
        await().atMost(PATIENCE).until(() -> lastGrant.lost().toCompletableFuture().isDone());

        assertThat(first.lost().toCompletableFuture()).isDone();
        assertThat(((DefaultSession) session).grantsTracked()).isZero();
    }
}
