package io.fencer.server;

import static io.fencer.server.TestServers.acquire;
import static io.fencer.server.TestServers.acquireRequest;
import static io.fencer.server.TestServers.describe;
import static io.fencer.server.TestServers.openSession;
import static io.fencer.server.TestServers.release;
import static io.fencer.server.TestServers.waiterSessions;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.common.util.concurrent.ListenableFuture;
import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.ReleaseResponse;
import io.fencer.core.Ticker;
import io.fencer.server.TestServers.TestSession;
import io.fencer.testing.FreePorts;
import io.grpc.ManagedChannel;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * An acquire whose wait ended must leave nothing queued. The lost reply is real: the first
 * attempt waits in the queue when its server stops (the attempt fails, its queued place survives in the Raft log),
 * and the client's retry after the wait's end asks with {@code wait_millis = 0} and the same request id.
 */
class AcquireTimeoutTest {
    private static final long TTL_MILLIS = 3_600_000;
    private static final Duration WAIT_MAX = Duration.ofSeconds(30);

    @TempDir
    Path dataDir;
    private ServerConfig config;
    private FencerServer server;
    private ManagedChannel channel;
    private LocksGrpc.LocksBlockingStub stub;

    @AfterEach
    void stop() throws Exception {
        closeServer();
    }

    @Test
    void acquire_retryWithoutWaitAfterLostReply_cancelsTheOrphanedWaitAndTheLockIsNotGrantedToIt() throws Exception {
        config = TestServers.singlePeer(dataDir, Ticker.system())
                .withPorts(FreePorts.one(), 0, FreePorts.one());
        startServer();
        TestSession holder = openSession(stub, TTL_MILLIS);
        TestSession waiter = openSession(stub, TTL_MILLIS);
        AcquireResponse held = acquire(stub, holder, "orders", 0);
        ListenableFuture<AcquireResponse> firstAttempt = LocksGrpc.newFutureStub(channel)
                .withDeadlineAfter(60, TimeUnit.SECONDS)
                .acquire(acquireRequest(waiter, "orders", "attempt-1", 60_000));
        await().atMost(WAIT_MAX).until(() -> waiterSessions(stub, "orders").contains(waiter.id()));

        closeServer(); // the first attempt's answer is lost; its queued place is in the log
        assertThat(firstAttempt).failsWithin(WAIT_MAX).withThrowableOfType(ExecutionException.class);
        startServer();
        assertThat(waiterSessions(stub, "orders")).as("the place survived the restart").contains(waiter.id());

        AcquireResponse retry = acquire(stub, waiter, "orders", "attempt-1", 0);
        assertThat(retry.getAcquired()).isFalse();
        assertThat(retry.getHolder()).isEqualTo(held.getToken());
        assertThat(waiterSessions(stub, "orders")).as("the timed-out wait left the queue").doesNotContain(waiter.id());
        ReleaseResponse released = release(stub, holder, held.getToken());
        assertThat(released.hasNext()).as("the release granted nobody").isFalse();
        assertThat(describe(stub, "orders").hasHolder()).isFalse();
    }

    @Test
    void acquire_tryWhileAnotherCallWaitsForTheSamePlace_leavesThePlaceToThatCall() throws Exception {
        config = TestServers.singlePeer(dataDir, Ticker.system());
        startServer();
        TestSession holder = openSession(stub, TTL_MILLIS);
        TestSession waiter = openSession(stub, TTL_MILLIS);
        AcquireResponse held = acquire(stub, holder, "orders", 0);
        ListenableFuture<AcquireResponse> waiting = LocksGrpc.newFutureStub(channel)
                .withDeadlineAfter(60, TimeUnit.SECONDS)
                .acquire(acquireRequest(waiter, "orders", "waiting", 60_000));
        await().atMost(WAIT_MAX).until(() -> waiterSessions(stub, "orders").contains(waiter.id()));

        AcquireResponse tried = acquire(stub, waiter, "orders", "try", 0);
        ReleaseResponse released = release(stub, holder, held.getToken());

        assertThat(tried.getAcquired()).isFalse();
        assertThat(released.getNext().getValue()).as("the waiting call kept its place").isPositive();
        assertThat(waiting.get(30, TimeUnit.SECONDS).getToken()).isEqualTo(released.getNext());
    }

    private void startServer() throws Exception {
        server = FencerServer.start(config);
        channel = TestServers.channel(server);
        stub = TestServers.stub(channel);
        TestServers.awaitServing(server, channel);
    }

    /** Closes the server first: a client that hung up first would cancel its waiting call, which leaves the queue. */
    private void closeServer() throws Exception {
        if (server != null) {
            server.close();
            server = null;
        }
        if (channel != null) {
            TestServers.close(channel);
            channel = null;
        }
    }
}
