package io.fencer.server;

import static io.fencer.server.TestServers.acquire;
import static io.fencer.server.TestServers.openSession;
import static io.fencer.server.TestServers.release;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import io.fencer.api.v1.CallError;
import io.fencer.api.v1.FencingToken;
import io.fencer.api.v1.GetRequest;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.Reason;
import io.fencer.api.v1.StoreGrpc;
import io.fencer.api.v1.StorePipelineRequest;
import io.fencer.api.v1.StorePipelineResponse;
import io.fencer.api.v1.WriteRequest;
import io.fencer.core.ManualTicker;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.stub.StreamObserver;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code Store.Pipeline} on a real server: writes and reads on one stream behave as their unary forms. */
@SuppressWarnings("deprecation") // reads CallError's deprecated fields, which clients of the previous release read
class StorePipelineTest {
    private static final long TTL_MILLIS = 60_000;

    @TempDir
    Path dataDir;
    private FencerServer server;
    private ManagedChannel channel;
    private LocksGrpc.LocksBlockingStub locks;
    private final LinkedBlockingQueue<Object> answers = new LinkedBlockingQueue<>();
    private StreamObserver<StorePipelineRequest> requests;

    @BeforeEach
    void start() throws Exception {
        server = FencerServer.start(TestServers.singlePeer(dataDir, new ManualTicker()));
        channel = TestServers.channel(server);
        locks = TestServers.stub(channel);
        TestServers.awaitServing(server, channel);
        requests = StoreGrpc.newStub(channel).pipeline(TestServers.collecting(answers));
    }

    @AfterEach
    void stop() throws Exception {
        requests.onCompleted();
        TestServers.close(channel);
        server.close();
    }

    @Test
    void storePipeline_staleWriteAfterNewerGrant_refusedWithAcceptedTokenAndNewerValueRead() throws Exception {
        TestServers.TestSession sessionA = openSession(locks, TTL_MILLIS);
        TestServers.TestSession sessionB = openSession(locks, TTL_MILLIS);
        FencingToken first = acquire(locks, sessionA, "orders", 0).getToken();
        release(locks, sessionA, first);
        FencingToken second = acquire(locks, sessionB, "orders", 0).getToken();

        StorePipelineResponse accepted = call(StorePipelineRequest.newBuilder().setCallId(1)
                .setWrite(StoreServiceTest.StoreTesting.put("orders", second.getSequencer(), "k", "B")).build());
        StorePipelineResponse stale = call(StorePipelineRequest.newBuilder().setCallId(2)
                .setWrite(StoreServiceTest.StoreTesting.put("orders", first.getSequencer(), "k", "A")).build());
        StorePipelineResponse read = call(StorePipelineRequest.newBuilder().setCallId(3)
                .setGet(GetRequest.newBuilder().setScope("orders").setKey(ByteString.copyFromUtf8("k"))).build());

        assertThat(accepted.getWrite().getAccepted()).isEqualTo(second.getValue());
        CallError error = stale.getError();
        assertThat(error.getStatusCode()).isEqualTo(Status.Code.FAILED_PRECONDITION.value());
        assertThat(error.getDetail().getReason()).isEqualTo(Reason.REASON_STALE_TOKEN);
        assertThat(error.getDetail().getPresentedToken()).isEqualTo(first.getValue());
        assertThat(error.getDetail().getCurrentToken()).isEqualTo(second.getValue());
        assertThat(read.getGet().getValue().toString(StandardCharsets.UTF_8)).isEqualTo("B");
        assertThat(read.getGet().getWrittenBy()).isEqualTo(second.getValue());
    }

    @Test
    void storePipeline_sameIdempotencyKeyAndTokenWithOtherOps_refusedAsItsUnaryFormAndRetryReplayed()
            throws Exception {
        String sequencer = io.fencer.core.Sequencer.format(new io.fencer.core.FencingToken("orders", 4));
        WriteRequest first = StoreServiceTest.StoreTesting.put("orders", sequencer, "k", "A").toBuilder()
                .setIdempotencyKey("req-1").build();

        StorePipelineResponse applied = call(StorePipelineRequest.newBuilder().setCallId(1).setWrite(first).build());
        StorePipelineResponse otherOps = call(StorePipelineRequest.newBuilder().setCallId(2)
                .setWrite(first.toBuilder().setOps(0, StoreServiceTest.StoreTesting.putOp("k",
                        "B".getBytes(StandardCharsets.UTF_8)))).build());
        StorePipelineResponse retry = call(StorePipelineRequest.newBuilder().setCallId(3).setWrite(first).build());

        CallError error = otherOps.getError();
        assertThat(error.getStatusCode()).isEqualTo(Status.Code.FAILED_PRECONDITION.value());
        assertThat(error.getDetail().getReason()).isEqualTo(Reason.REASON_IDEMPOTENCY_MISMATCH);
        assertThat(error.getDetail().getLock()).isEqualTo("orders");
        assertThat(error.getDetail().getValue()).isEqualTo("req-1");
        assertThat(retry.getWrite().getReplayed()).isTrue();
        assertThat(retry.getWrite().getRevision()).isEqualTo(applied.getWrite().getRevision());
    }

    @Test
    void storePipeline_callWithoutCall_refusedByCallIdAndStreamKeepsServing() throws Exception {
        CallError empty = call(StorePipelineRequest.newBuilder().setCallId(5).build()).getError();
        StorePipelineResponse read = call(StorePipelineRequest.newBuilder().setCallId(6)
                .setGet(GetRequest.newBuilder().setScope("nothing").setKey(ByteString.copyFromUtf8("k"))).build());

        assertThat(empty.getStatusCode()).isEqualTo(Status.Code.INVALID_ARGUMENT.value());
        assertThat(empty.getDescription()).contains("5", "write, get or cancel");
        assertThat(read.getGet().getFound()).isFalse();
    }

    /** Sends {@code request} and returns its answer; calls are made one at a time here. */
    private StorePipelineResponse call(StorePipelineRequest request) throws InterruptedException {
        requests.onNext(request);
        Object answer = answers.poll(30, TimeUnit.SECONDS);
        if (!(answer instanceof StorePipelineResponse response)) {
            throw new AssertionError("no answer to call " + request.getCallId() + ": " + answer);
        }
        assertThat(response.getCallId()).isEqualTo(request.getCallId());
        return response;
    }
}
