package io.fencer.client.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.fencer.api.v1.DescribeRequest;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.LockInfo;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.Reason;
import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.UnavailableException;
import io.grpc.Status;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class LeaderFollowingTest {
    private final FakeServer follower = FakeServer.start();
    private final FakeServer leader = FakeServer.start();
    private FencerClient client;

    @AfterEach
    void tearDown() {
        if (client != null) {
            client.close();
        }
        follower.close();
        leader.close();
    }

    private FencerClient connect(Duration callTimeout, String... endpoints) {
        client = Fencer.newBuilder().endpoints(endpoints).callTimeout(callTimeout).build();
        return client;
    }

    @Test
    void call_answeredNotLeaderWithAddress_goesToThatLeaderAndStaysThere() {
        follower.locks.failEverything = FakeLocks.notLeader(leader.endpoint());
        leader.locks.onDescribe = request -> LockInfo.newBuilder().setLock(request.getLock()).setLastToken(7).build();
        connect(Duration.ofSeconds(10), follower.endpoint());

        assertThat(client.describe("orders").lastToken()).isEqualTo(7);
        assertThat(client.describe("orders").lastToken()).isEqualTo(7);

        assertThat(follower.locks.count("Describe")).isEqualTo(1);
        assertThat(leader.locks.count("Describe")).isEqualTo(2);
        Router router = ((DefaultFencerClient) client).router();
        assertThat(router.current()).isEqualTo(leader.endpoint());
        assertThat(router.endpoints()).containsExactly(follower.endpoint(), leader.endpoint());
    }

    @Test
    void call_answeredNotLeaderWithoutAddress_triesTheNextEndpoint() {
        follower.locks.failEverything = FakeLocks.notLeader("");
        connect(Duration.ofSeconds(10), follower.endpoint(), leader.endpoint());

        assertThat(client.describe("orders").lock()).isEqualTo("orders");

        assertThat(follower.locks.count("Describe")).isEqualTo(1);
        assertThat(leader.locks.count("Describe")).isEqualTo(1);
    }

    @Test
    void call_endpointRefusesConnections_isSkipped() {
        connect(Duration.ofSeconds(10), FakeServer.refusedEndpoint(), leader.endpoint());

        assertThat(client.describe("orders").lock()).isEqualTo("orders");

        assertThat(leader.locks.count("Describe")).isEqualTo(1);
        assertThat(((DefaultFencerClient) client).router().current()).isEqualTo(leader.endpoint());
    }

    @Test
    void call_endpointNeverAnswers_movesOnAfterTheAttemptDeadline() {
        follower.locks.silent = true; // a paused leader: connected, but no answer
        connect(Duration.ofSeconds(9), follower.endpoint(), leader.endpoint()); // attempts of 3 s

        assertThat(client.describe("orders").lock()).isEqualTo("orders");

        assertThat(follower.locks.count("Describe")).isEqualTo(1);
        assertThat(leader.locks.count("Describe")).isEqualTo(1);
    }

    @Test
    void call_endpointNeverAnswers_isCancelledOnThatPeerAtTheAttemptDeadline() {
        follower.locks.silent = true;
        connect(Duration.ofSeconds(9), follower.endpoint(), leader.endpoint()); // attempts of 3 s
        long startNanos = System.nanoTime();

        assertThat(client.describe("orders").lock()).isEqualTo("orders");

        // The client enforces the attempt's deadline itself (no grpc-timeout on the wire) and cancels the call,
        // so the silent peer learns that the caller gave up, as it would from a passed gRPC deadline.
        assertThat(Duration.ofNanos(System.nanoTime() - startNanos)).isBetween(Duration.ofMillis(2_900),
                Duration.ofSeconds(8));
        await().atMost(Duration.ofSeconds(5))
                .untilAsserted(() -> assertThat(follower.locks.cancelledCalls).containsExactly("Describe"));
        assertThat(follower.locks.callsWithDeadline).isEmpty();
        assertThat(leader.locks.callsWithDeadline).isEmpty();
    }

    @Test
    void call_interruptedWhileWaiting_failsAtOnceCancelsAndKeepsTheInterrupt() throws InterruptedException {
        follower.locks.silent = true;
        connect(Duration.ofSeconds(30), follower.endpoint());
        AtomicReference<Throwable> failure = new AtomicReference<>();
        AtomicBoolean interruptKept = new AtomicBoolean();
        Thread caller = new Thread(() -> {
            try {
                client.describe("orders");
            } catch (RuntimeException e) {
                failure.set(e);
                interruptKept.set(Thread.currentThread().isInterrupted());
            }
        });
        caller.start();
        await().atMost(Duration.ofSeconds(5)).until(() -> follower.locks.count("Describe") == 1);

        caller.interrupt();
        caller.join(5_000);

        assertThat(caller.isAlive()).isFalse();
        assertThat(failure.get()).isInstanceOf(UnavailableException.class).hasMessageContaining("interrupted");
        assertThat(interruptKept).isTrue();
        await().atMost(Duration.ofSeconds(5))
                .untilAsserted(() -> assertThat(follower.locks.cancelledCalls).containsExactly("Describe"));
    }

    @Test
    void call_followerNamesThePausedOldLeader_skipsItWhileSuspected() {
        try (FakeServer newLeader = FakeServer.start()) {
            leader.locks.silent = true; // the old leader, paused: it keeps its connection and never answers
            follower.locks.failEverything = FakeLocks.notLeader(leader.endpoint()); // a stale view of the leader
            connect(Duration.ofSeconds(9), leader.endpoint(), follower.endpoint(), newLeader.endpoint());

            assertThat(client.describe("orders").lock()).isEqualTo("orders");

            assertThat(leader.locks.count("Describe")).isEqualTo(1);
            assertThat(follower.locks.count("Describe")).isEqualTo(1);
            assertThat(newLeader.locks.count("Describe")).isEqualTo(1);
        }
    }

    @Test
    void call_everyEndpointRefusesPastCallTimeout_throwsUnavailableNamingTheEndpointsAndNothingSent() {
        String first = FakeServer.refusedEndpoint();
        String second = FakeServer.refusedEndpoint();
        connect(Duration.ofSeconds(2), first, second);

        // The endpoints are named in the order tried: the peer directory's first List, in the background, may have
        // moved the client from the first before the call began.
        assertThatThrownBy(() -> client.describe("orders"))
                .isInstanceOf(UnavailableException.class)
                .hasMessageStartingWith("Describe orders failed: cannot connect to ")
                .hasMessageContaining(first).hasMessageContaining(second)
                .hasMessageContaining(" (connection refused, for ")
                .hasMessageEndingWith("ms); nothing was sent");
    }

    @Test
    void call_peerAcceptsConnectionsButNeverSpeaks_throwsUnavailableSayingNothingWasSent() throws IOException {
        // The kernel completes connections into the backlog of a socket nobody accepts from: no HTTP/2 ever comes.
        try (ServerSocket silent = new ServerSocket(0, 8, InetAddress.getByName("127.0.0.1"))) {
            String endpoint = "127.0.0.1:" + silent.getLocalPort();
            client = Fencer.newBuilder().endpoints(endpoint).callTimeout(Duration.ofSeconds(1)).build();

            assertThatThrownBy(() -> client.openSession(Duration.ofSeconds(10)))
                    .isInstanceOf(UnavailableException.class)
                    .hasMessageContaining("cannot connect to " + endpoint + " (connection not ready, for ")
                    .hasMessageEndingWith("ms); nothing was sent").hasMessageNotContaining("may or may not");
        }
    }

    /** Regression: ended by the call timeout before the unreachable timeout, it said "a read, it changed nothing". */
    @Test
    void call_refusedUntilTheCallTimeoutEndsItBeforeTheUnreachableTimeout_saysNothingWasSent() {
        String first = FakeServer.refusedEndpoint();
        client = Fencer.newBuilder().endpoints(first).callTimeout(Duration.ofSeconds(1))
                .unreachableTimeout(Duration.ofSeconds(30)).build();
        long startNanos = System.nanoTime();

        assertThatThrownBy(() -> client.describe("orders"))
                .isInstanceOf(UnavailableException.class)
                .hasMessageContaining("cannot connect to " + first + " (connection refused, for ")
                .hasMessageEndingWith("ms); nothing was sent");
        assertThat(Duration.ofNanos(System.nanoTime() - startNanos)).as("ended by the call timeout, less a retry pause it had no time for")
                .isBetween(Duration.ofMillis(750), Duration.ofSeconds(10));
    }

    @Test
    void call_noPeerKnowsTheLeaderPastCallTimeout_throwsUnavailableWithTheLastError() {
        follower.locks.failEverything = FakeLocks.notLeader("");
        leader.locks.failEverything = FakeLocks.notLeader("");
        connect(Duration.ofSeconds(2), follower.endpoint(), leader.endpoint());

        assertThatThrownBy(() -> client.describe("orders"))
                .isInstanceOf(UnavailableException.class)
                .hasMessageContaining(follower.endpoint())
                .hasMessageContaining(leader.endpoint())
                // when the deadline cuts the last attempt short, the not-leader answer is named as the error before it
                .hasMessageContaining("UNAVAILABLE REASON_NOT_LEADER");
        assertThat(follower.locks.count("Describe")).isPositive();
    }

    @Test
    void call_retryPauseOversleepsTheCallTimeout_failsWithTheLastRealErrorWithoutAnotherAttempt() {
        // Unavailable without an answer from the group: a NOT_LEADER answer would give the call an election's wait.
        follower.locks.failEverything = FakeLocks.plainUnavailable();
        leader.locks.failEverything = FakeLocks.plainUnavailable();
        // A thread descheduled on a loaded machine wakes from its backoff after the call's timeout has passed.
        long timeoutNanos = Duration.ofMillis(300).toNanos();
        DescribeRequest request = DescribeRequest.newBuilder().setLock("orders").build();
        try (Router router = new Router(List.of(follower.endpoint(), leader.endpoint()), timeoutNanos,
                nanos -> TimeUnit.NANOSECONDS.sleep(nanos + timeoutNanos))) {

            assertThatThrownBy(() -> router.call("Describe orders",
                    calls -> calls.call(LocksGrpc.getDescribeMethod(), request)))
                    .isInstanceOf(UnavailableException.class)
                    .hasMessageContaining("endpoints tried: " + follower.endpoint() + " (known:")
                    .hasMessageContaining("last error: UNAVAILABLE: connection reset (scripted)")
                    .hasMessageNotContaining("DEADLINE_EXCEEDED");
            assertThat(follower.locks.count("Describe")).isEqualTo(1);
            assertThat(leader.locks.count("Describe")).isZero();
        }
    }

    @Test
    void call_refusedByTheServer_isNotRetried() {
        leader.locks.failNext("Describe", FakeLocks.error(Status.Code.INVALID_ARGUMENT, ErrorDetail.newBuilder()
                .setReason(Reason.REASON_INVALID_ARGUMENT).setField("lock").setValue("orders")
                .setMessage("no such thing").build()));
        connect(Duration.ofSeconds(10), leader.endpoint());

        assertThatThrownBy(() -> client.describe("orders"))
                .isInstanceOf(InvalidArgumentException.class).hasMessage("no such thing");
        assertThat(leader.locks.count("Describe")).isEqualTo(1);
    }

    @Test
    void call_plainUnavailableThenSuccess_retriesOnTheSameSingleEndpoint() {
        leader.locks.failNext("Describe", FakeLocks.plainUnavailable());
        leader.locks.failNext("Describe", FakeLocks.plainUnavailable());
        connect(Duration.ofSeconds(10), leader.endpoint());

        assertThat(client.describe("orders").lock()).isEqualTo("orders");
        assertThat(leader.locks.count("Describe")).isEqualTo(3);
    }

    @Test
    void call_cancelledByTheServer_isRetried() {
        leader.locks.failNext("Describe",
                Status.CANCELLED.withDescription("server shutting down").asRuntimeException());
        connect(Duration.ofSeconds(10), leader.endpoint());

        assertThat(client.describe("orders").lock()).isEqualTo("orders");
        assertThat(leader.locks.count("Describe")).isEqualTo(2);
    }

    @Test
    void call_callerInterrupted_stopsWithUnavailableAndKeepsTheInterrupt() throws Exception {
        leader.locks.silent = true;
        connect(Duration.ofSeconds(60), leader.endpoint());
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        AtomicBoolean stillInterrupted = new AtomicBoolean();
        Thread caller = new Thread(() -> {
            try {
                client.describe("orders");
            } catch (RuntimeException e) {
                thrown.set(e);
                stillInterrupted.set(Thread.currentThread().isInterrupted());
            }
        });
        caller.start();
        await().atMost(Duration.ofSeconds(20)).until(() -> leader.locks.count("Describe") == 1);

        caller.interrupt();
        caller.join(Duration.ofSeconds(20).toMillis());

        assertThat(caller.isAlive()).isFalse();
        assertThat(thrown.get()).isInstanceOf(UnavailableException.class);
        assertThat(stillInterrupted).isTrue();
        assertThat(leader.locks.count("Describe")).isEqualTo(1);
    }

    @Test
    void call_afterClose_failsFast() {
        connect(Duration.ofSeconds(10), leader.endpoint());
        client.close();

        assertThatThrownBy(() -> client.describe("orders")).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("closed");
        assertThat(leader.locks.count("Describe")).isZero();
    }
}
