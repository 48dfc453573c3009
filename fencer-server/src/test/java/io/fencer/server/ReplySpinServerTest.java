package io.fencer.server;

import static io.fencer.server.TestServers.openSession;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.fencer.api.v1.CancelCall;
import io.fencer.api.v1.FencingToken;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.PipelineRequest;
import io.fencer.api.v1.PipelineResponse;
import io.fencer.core.ManualTicker;
import io.fencer.server.TestServers.TestSession;
import io.grpc.ManagedChannel;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The reply spin of a real lock server ({@link io.fencer.server.rpc.ReplySpin}): a lone client's unary and pipelined
 * calls are counted in flight on their event loop and back to zero, its loops spin for them, and the admin port
 * shows both.
 */
class ReplySpinServerTest {
    private static final long TTL_MILLIS = 60_000;
    private static final Duration WAIT_MAX = Duration.ofSeconds(30);

    @TempDir
    Path dataDir;
    private FencerServer server;
    private ManagedChannel channel;
    private LocksGrpc.LocksBlockingStub stub;
    private PipelineTest.Pipe pipe;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    @BeforeEach
    void start() throws Exception {
        // 10 ms: far above a commit here, even on a loaded machine, so that the loops surely spin.
        server = FencerServer.start(TestServers.singlePeer(dataDir, new ManualTicker())
                .withReplySpin(Duration.ofMillis(10)));
        channel = TestServers.channel(server);
        stub = TestServers.stub(channel);
        TestServers.awaitServing(server, channel);
        pipe = new PipelineTest.Pipe(channel);
    }

    @AfterEach
    void stop() throws Exception {
        pipe.close();
        TestServers.close(channel);
        server.close();
    }

    @Test
    void loneClient_unaryAndPipelinedCycles_spinAndCountBackToZero() throws Exception {
        TestSession session = openSession(stub, TTL_MILLIS);
        long callId = 0;
        for (int i = 0; i < 30; i++) {
            FencingToken token = TestServers.acquire(stub, session, "unary", 0).getToken();
            TestServers.release(stub, session, token);
            token = pipe.call(++callId, TestServers.acquireRequest(session, "piped", "r" + i, 0))
                    .getAcquire().getToken();
            assertThat(pipe.call(++callId, TestServers.releaseRequest(session, token)).getRelease().getReleased())
                    .isEqualTo(token);
        }

        await().atMost(WAIT_MAX).until(() -> metric("fencer_reply_spin_calls") == 0);
        assertThat(metric("fencer_reply_spins_total{outcome=\"found\"}")).as("waits that polled and found work")
                .isGreaterThanOrEqualTo(60);
    }

    @Test
    void pipelinedWaitingAcquire_duplicateIdRefusedThenCancelled_countsBackToZero() throws Exception {
        TestSession holder = openSession(stub, TTL_MILLIS);
        TestSession waiter = openSession(stub, TTL_MILLIS);
        FencingToken held = pipe.call(1, TestServers.acquireRequest(holder, "queue", "h", 0)).getAcquire().getToken();
        pipe.send(2, TestServers.acquireRequest(waiter, "queue", "w", 30_000));
        await().atMost(WAIT_MAX).until(() -> metric("fencer_reply_spin_calls") == 1);
        PipelineResponse duplicate = pipe.call(2, TestServers.acquireRequest(waiter, "other", "d", 0));
        assertThat(duplicate.getError().getStatus().getMessage()).contains("call_id 2 is already in flight");
        assertThat(metric("fencer_reply_spin_calls")).as("the refused duplicate is not counted on").isEqualTo(1);

        pipe.send(PipelineRequest.newBuilder().setCallId(2).setCancel(CancelCall.getDefaultInstance()).build());

        await().atMost(WAIT_MAX).until(() -> metric("fencer_reply_spin_calls") == 0);
        assertThat(pipe.call(3, TestServers.releaseRequest(holder, held)).getRelease().getReleased()).isEqualTo(held);
    }

    /** Returns the value of the Prometheus line of {@code series} on the admin port. */
    private double metric(String series) throws Exception {
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.adminPort()
                + "/metrics")).timeout(Duration.ofSeconds(20)).GET().build();
        String body = http.send(request, HttpResponse.BodyHandlers.ofString()).body();
        Matcher matcher = Pattern.compile("(?m)^" + Pattern.quote(series) + " (\\S+)$").matcher(body);
        if (!matcher.find()) {
            throw new AssertionError("no " + series + " on /metrics:\n" + body);
        }
        return Double.parseDouble(matcher.group(1));
    }
}
