package io.fencer.server;

import static io.fencer.server.TestServers.acquire;
import static io.fencer.server.TestServers.openSession;
import static io.fencer.server.TestServers.release;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.common.util.concurrent.ListenableFuture;
import com.google.protobuf.ByteString;
import io.fencer.core.ManualTicker;
import io.fencer.server.TestServers.TestSession;
import io.fencer.api.v1.AcquireRequest;
import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.CloseSessionRequest;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.FencingToken;
import io.fencer.api.v1.GetRequest;
import io.fencer.api.v1.KeepAliveRequest;
import io.fencer.api.v1.KeepAliveResponse;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.PipelineRequest;
import io.fencer.api.v1.PipelineResponse;
import io.fencer.api.v1.Reason;
import io.fencer.api.v1.StoreGrpc;
import io.fencer.api.v1.StorePipelineRequest;
import io.fencer.api.v1.StorePipelineResponse;
import io.fencer.api.v1.WriteRequest;
import io.fencer.server.rpc.PipelineStream;
import io.fencer.server.rpc.StreamFlow;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongFunction;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Flow control of the server's streams, on one real server over real gRPC: a client that keeps sending but never
 * reads is no longer read (its own HTTP/2 window holds it back), the answers the server holds for it are those of
 * its calls in flight, within {@code pipelineAnswerBytesQueuedMax} (or the stream is ended RESOURCE_EXHAUSTED naming
 * it), none is lost once it reads, and meanwhile another client's acquire/release cycles keep completing.
 *
 * <p>The flooding client has its own connection with a 64 KiB HTTP/2 window, so that a few thousand small answers
 * fill it (the default 1 MiB window only takes longer to fill). Heap figures are the test JVM's (server and both
 * clients) after {@code System.gc()}, printed to the test's output.
 */
class StreamFlowControlTest {
    private static final long TTL_MILLIS = 600_000;
    private static final Duration WAIT_MAX = Duration.ofSeconds(60);
    private static final int FLOOD_CALLS = 20_000;
    private static final int CYCLES = 200;
    private static final int FLOOD_WINDOW_BYTES = 64 * 1024;

    @TempDir
    Path dataDir;
    private FencerServer server;
    private ManagedChannel channel;
    private ManagedChannel floodChannel;
    private LocksGrpc.LocksBlockingStub stub;

    @BeforeEach
    void start() throws Exception {
        // The grants test queues 1,000 waits of one identity, the default waitersPerIdentityMax: a reservation in
        // flight counts beside applied waits, so at the quota's edge some would be refused (QuotaLedger).
        server = FencerServer.start(TestServers.singlePeer(dataDir, new ManualTicker())
                .withQuotas(IdentityQuotas.DEFAULT.withWaitersPerIdentityMax(10_000)));
        channel = TestServers.channel(server);
        stub = TestServers.stub(channel);
        TestServers.awaitServing(server, channel);
        floodChannel = NettyChannelBuilder.forAddress("127.0.0.1", server.port()).usePlaintext()
                .flowControlWindow(FLOOD_WINDOW_BYTES).build();
    }

    @AfterEach
    void stop() throws Exception {
        TestServers.close(floodChannel);
        TestServers.close(channel);
        server.close();
    }

    @Test
    void locksPipeline_clientSendsCallsAndNeverReads_stopsBeingReadWhileOthersCycleAndLosesNoAnswer()
            throws Exception {
        TestSession holder = openSession(stub, TTL_MILLIS);
        acquire(stub, holder, "flooded", 0);
        TestSession flooder = openSession(stub, TTL_MILLIS);
        NeverReading<PipelineRequest, PipelineResponse> flood = new NeverReading<>();
        LocksGrpc.newStub(floodChannel).pipeline(flood);

        floodAndCheckPaused(server.pipelineFlow(), flood, callId -> PipelineRequest.newBuilder().setCallId(callId)
                .setAcquire(tryAcquire(flooder, "flooded", "flood-" + callId)).build());

        flood.read();
        await().atMost(WAIT_MAX).until(() -> flood.answers().size() == FLOOD_CALLS);
        // Once read, the client has more calls in flight than the server takes: those are refused, as before.
        assertThat(flood.answers()).as("every call answered busy or refused, under its own call id")
                .allSatisfy(StreamFlowControlTest::assertBusyOrRefusedInFlight)
                .extracting(PipelineResponse::getCallId).doesNotHaveDuplicates();
        assertThat(server.pipelineFlow().streamsPaused()).isZero();
        assertThat(server.pipelineFlow().backlogEnds()).isZero();
    }

    @Test
    void storePipeline_clientSendsGetsAndNeverReads_stopsBeingReadWhileOthersCycleAndLosesNoAnswer()
            throws Exception {
        FencingToken writer = acquire(stub, openSession(stub, TTL_MILLIS), "scope", 0).getToken();
        StoreServiceTest.StoreTesting.stub(channel).write(putBytes("scope", writer.getSequencer(), 1024));
        NeverReading<StorePipelineRequest, StorePipelineResponse> flood = new NeverReading<>();
        StoreGrpc.newStub(floodChannel).pipeline(flood);

        floodAndCheckPaused(server.store().pipelineFlow(), flood, callId -> StorePipelineRequest.newBuilder()
                .setCallId(callId).setGet(get("scope")).build());

        flood.read();
        await().atMost(WAIT_MAX).until(() -> flood.answers().size() == FLOOD_CALLS);
        assertThat(flood.answers()).as("every read answered with the value or refused, under its own call id")
                .allSatisfy(answer -> assertThat(answer.hasError()
                        ? answer.getError().getDetail().getLimit() : answer.getGet().getValue().size())
                        .isIn("pipelineCallsInFlightMax", 1024))
                .extracting(StorePipelineResponse::getCallId).doesNotHaveDuplicates();
        assertThat(server.store().pipelineFlow().backlogEnds()).isZero();
    }

    @Test
    void keepAlive_clientSendsKeepalivesAndNeverReads_stopsBeingReadWhileOthersCycleAndLosesNoAnswer()
            throws Exception {
        TestSession session = openSession(stub, TTL_MILLIS);
        NeverReading<KeepAliveRequest, KeepAliveResponse> flood = new NeverReading<>();
        LocksGrpc.newStub(floodChannel).keepAlive(flood);

        floodAndCheckPaused(server.keepAliveFlow(), flood,
                callId -> KeepAliveRequest.newBuilder().setSessionId(session.id()).setSessionSecret(session.secret())
                        .build());
        assertThat(TestServers.keepAliveOnce(channel, session).getTtlMillis())
                .as("another client's keepalive is answered").isPositive();

        flood.read();
        await().atMost(WAIT_MAX).until(() -> flood.answers().size() == FLOOD_CALLS);
        assertThat(flood.answers()).allSatisfy(answer -> assertThat(answer.getTtlMillis()).isPositive());
        assertThat(server.keepAliveFlow().streamsPaused()).isZero();
    }

    @Test
    void locksPipeline_grantsWhileNeverRead_queuedForTheClientWithinTheLimitAndAllDeliveredOnceItReads()
            throws Exception {
        int grants = 1_000;
        TestSession holder = openSession(stub, TTL_MILLIS);
        holdLocks(holder, "grant-", grants);
        acquire(stub, openSession(stub, TTL_MILLIS), "kept", 0);
        TestSession flooder = openSession(stub, TTL_MILLIS);
        NeverReading<PipelineRequest, PipelineResponse> flood = new NeverReading<>();
        LocksGrpc.newStub(floodChannel).pipeline(flood);
        StreamFlow flow = server.pipelineFlow();
        // Calls that wait stay in flight while the stream is read; then busy tries fill the client's window.
        for (int i = 0; i < grants; i++) {
            flood.send(PipelineRequest.newBuilder().setCallId(i + 1)
                    .setAcquire(tryAcquire(flooder, "grant-" + i, "wait-" + i).toBuilder().setWaitMillis(TTL_MILLIS))
                    .build());
        }
        await().atMost(WAIT_MAX).until(() -> server.pendingAcquires() == grants);
        for (int i = 0; i < FLOOD_CALLS; i++) {
            long callId = grants + 1 + i;
            flood.send(PipelineRequest.newBuilder().setCallId(callId)
                    .setAcquire(tryAcquire(flooder, "kept", "try-" + callId)).build());
        }
        long read = awaitReadingPaused(flow);

        stub.closeSession(CloseSessionRequest.newBuilder().setSessionId(holder.id())
                .setSessionSecret(holder.secret()).build()); // grants them all at once

        await().atMost(WAIT_MAX).until(() -> flow.answersQueued() >= grants);
        assertThat(flow.answersQueuedPeak()).as("only answers of calls in flight wait")
                .isLessThanOrEqualTo(PipelineStream.CALLS_IN_FLIGHT_MAX + 1);
        assertThat(cycleLocks("beside-the-grants")).isEqualTo(CYCLES);
        assertThat(flow.requestsRead()).as("still not read").isEqualTo(read);
        assertThat(flow.backlogEnds()).isZero();
        flood.read();
        await().atMost(WAIT_MAX).until(() -> flood.answers().size() == grants + FLOOD_CALLS);
        assertThat(flood.answers().stream().filter(answer -> answer.getAcquire().getAcquired()))
                .as("every waiting call granted").hasSize(grants);
        assertThat(flow.answersQueued()).isZero();
    }

    @Test
    void storePipeline_largeAnswersNeverRead_heldWithinTheByteLimit() throws Exception {
        int valueBytes = 1024 * 1024;
        int reads = 128; // 128 MiB of answers asked for, twice pipelineAnswerBytesQueuedMax
        FencingToken writer = acquire(stub, openSession(stub, TTL_MILLIS), "large", 0).getToken();
        StoreServiceTest.StoreTesting.stub(channel).write(putBytes("large", writer.getSequencer(), valueBytes));
        StreamFlow flow = server.store().pipelineFlow();
        long heapBefore = usedHeapBytes();
        NeverReading<StorePipelineRequest, StorePipelineResponse> flood = new NeverReading<>();
        StoreGrpc.newStub(floodChannel).pipeline(flood);

        for (int i = 1; i <= reads; i++) {
            flood.send(StorePipelineRequest.newBuilder().setCallId(i).setGet(get("large")).build());
        }
        // A large answer fills the transport at once, so the server stops reading after a few (it would end the
        // stream if the reads it had in flight by then passed the byte limit): either way what it holds is bounded.
        AtomicLong lastRead = new AtomicLong(-1);
        await().atMost(WAIT_MAX).pollInterval(Duration.ofMillis(500)).until(() -> {
            long read = flow.requestsRead();
            boolean stable = read == lastRead.getAndSet(read);
            return flow.backlogEnds() == 1 || stable && flow.streamsPaused() == 1;
        });
        long heapHeld = usedHeapBytes();
        report("store.pipeline, " + reads + " reads of 1 MiB never read", heapBefore, heapHeld, flow);

        assertThat(flow.requestsRead()).isLessThan(reads);
        assertThat(flow.answerBytesQueuedPeak()).isLessThanOrEqualTo(PipelineStream.ANSWER_BYTES_QUEUED_MAX);
        assertThat(heapHeld - heapBefore).as("heap held for a client that does not read")
                .isLessThan(PipelineStream.ANSWER_BYTES_QUEUED_MAX + 8L * valueBytes);
        assertThat(cycleLocks("beside-large")).isEqualTo(CYCLES);
        if (flow.backlogEnds() == 1) {
            flood.read();
            await().atMost(WAIT_MAX).until(() -> flood.error() != null);
            assertLimitExceeded(flood.error(), "pipelineAnswerBytesQueuedMax", PipelineStream.ANSWER_BYTES_QUEUED_MAX);
        } else {
            flood.read();
            await().atMost(WAIT_MAX).until(() -> flood.answers().size() == reads);
            report("store.pipeline, the same " + reads + " reads once read", 0, 0, flow);
            assertThat(flow.answerBytesQueuedPeak()).as("read slowly, it was slowed, not ended")
                    .isLessThanOrEqualTo(PipelineStream.ANSWER_BYTES_QUEUED_MAX);
            assertThat(flow.backlogEnds()).isZero();
        }
    }

    /**
     * Sends {@link #FLOOD_CALLS} requests made by {@code request} on a stream that never reads, waits until the
     * server stopped reading it, and checks that it stays so while another client cycles, within the limits.
     */
    private <RequestT> void floodAndCheckPaused(StreamFlow flow, NeverReading<RequestT, ?> flood,
            LongFunction<RequestT> request) throws Exception {
        long readBefore = flow.requestsRead();
        long heapBefore = usedHeapBytes();
        for (int i = 1; i <= FLOOD_CALLS; i++) {
            flood.send(request.apply(i));
        }
        long readWhilePaused = awaitReadingPaused(flow);
        long heapPaused = usedHeapBytes();
        int cycles = cycleLocks("beside-the-flood");
        report(flow.stream() + ", " + FLOOD_CALLS + " requests never read", heapBefore, heapPaused, flow);

        assertThat(cycles).as("another client's acquire/release cycles during the flood").isEqualTo(CYCLES);
        assertThat(flow.requestsRead()).as("no request of the flood read while its client does not read")
                .isEqualTo(readWhilePaused);
        assertThat(readWhilePaused - readBefore).as("requests read before the server stopped reading")
                .isPositive().isLessThan(FLOOD_CALLS);
        assertThat(flow.streamsPaused()).isEqualTo(1);
        assertThat(flow.answersQueuedPeak()).isLessThanOrEqualTo(PipelineStream.CALLS_IN_FLIGHT_MAX + 1);
        assertThat(flow.answerBytesQueuedPeak()).isLessThanOrEqualTo(PipelineStream.ANSWER_BYTES_QUEUED_MAX);
        assertThat(flow.backlogEnds()).isZero();
    }

    /**
     * Waits until one stream of {@code flow} is paused and no request was read over a whole poll interval (a pause
     * while the client's window still has room lasts milliseconds); returns the requests read.
     */
    private static long awaitReadingPaused(StreamFlow flow) {
        AtomicLong last = new AtomicLong(-1);
        await().atMost(WAIT_MAX).pollInterval(Duration.ofMillis(500)).until(() -> {
            long read = flow.requestsRead();
            return read == last.getAndSet(read) && flow.streamsPaused() == 1;
        });
        return last.get();
    }

    /** Runs {@link #CYCLES} acquire/release cycles of a fresh session on its own lock; returns those completed. */
    private int cycleLocks(String lock) {
        TestSession session = openSession(stub, TTL_MILLIS);
        int completed = 0;
        for (int i = 0; i < CYCLES; i++) {
            AcquireResponse granted = acquire(stub, session, lock, 0);
            assertThat(granted.getAcquired()).isTrue();
            release(stub, session, granted.getToken());
            completed++;
        }
        return completed;
    }

    /** Makes {@code session} hold {@code count} locks named {@code prefix + i}, with calls in flight together. */
    private void holdLocks(TestSession session, String prefix, int count) throws Exception {
        LocksGrpc.LocksFutureStub futures = LocksGrpc.newFutureStub(channel);
        List<ListenableFuture<AcquireResponse>> calls = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            calls.add(futures.withDeadlineAfter(60, TimeUnit.SECONDS)
                    .acquire(tryAcquire(session, prefix + i, "hold-" + i)));
        }
        for (ListenableFuture<AcquireResponse> call : calls) {
            assertThat(call.get(60, TimeUnit.SECONDS).getAcquired()).isTrue();
        }
    }

    private static void assertBusyOrRefusedInFlight(PipelineResponse answer) {
        if (answer.hasError()) {
            assertThat(answer.getError().getDetail().getLimit()).isEqualTo("pipelineCallsInFlightMax");
        } else {
            assertThat(answer.getAcquire().getHolder().getValue()).as("busy").isPositive();
        }
    }

    private static AcquireRequest tryAcquire(TestSession session, String lock, String requestId) {
        return TestServers.acquireRequest(session, lock, requestId, 0);
    }

    private static GetRequest get(String scope) {
        return GetRequest.newBuilder().setScope(scope).setKey(ByteString.copyFromUtf8("k")).build();
    }

    private static WriteRequest putBytes(String scope, String sequencer, int bytes) {
        return WriteRequest.newBuilder().setScope(scope).setSequencer(sequencer)
                .addOps(StoreServiceTest.StoreTesting.putOp("k", new byte[bytes])).build();
    }

    private static void assertLimitExceeded(Throwable error, String limit, long limitValue) {
        assertThat(error).isInstanceOf(StatusRuntimeException.class);
        StatusRuntimeException status = (StatusRuntimeException) error;
        assertThat(status.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
        assertThat(status.getStatus().getDescription()).contains("does not read its answers");
        ErrorDetail detail = TestServers.detail(status);
        assertThat(detail.getReason()).isEqualTo(Reason.REASON_LIMIT_EXCEEDED);
        assertThat(detail.getLimit()).isEqualTo(limit);
        assertThat(detail.getLimitValue()).isEqualTo(limitValue);
    }

    /** Returns the heap in use after full collections: what the JVM still holds. */
    private static long usedHeapBytes() {
        for (int i = 0; i < 2; i++) {
            System.gc();
        }
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }

    private static void report(String what, long heapBefore, long heapAfter, StreamFlow flow) {
        System.out.printf("%s: heap %,d -> %,d bytes (%+,d); requests read %,d, pauses %,d, answers queued now %,d,"
                + " peak %,d answers / %,d bytes, streams ended for their backlog %d%n", what, heapBefore, heapAfter,
                heapAfter - heapBefore, flow.requestsRead(), flow.pauses(), flow.answersQueued(),
                flow.answersQueuedPeak(), flow.answerBytesQueuedPeak(), flow.backlogEnds());
    }

    /**
     * A raw client stream that reads nothing until {@link #read}: gRPC asks its transport for no message, so the
     * HTTP/2 window it grants the server is never returned.
     */
    private static final class NeverReading<RequestT, ResponseT>
            implements ClientResponseObserver<RequestT, ResponseT> {
        private final Queue<ResponseT> answers = new ConcurrentLinkedQueue<>();
        private final AtomicReference<Throwable> error = new AtomicReference<>();
        private volatile ClientCallStreamObserver<RequestT> requests;

        @Override
        public void beforeStart(ClientCallStreamObserver<RequestT> requestStream) {
            requests = requestStream;
            requestStream.disableAutoRequestWithInitial(0);
        }

        /** Sends one request; gRPC buffers what the transport cannot take yet (in the client). */
        synchronized void send(RequestT request) {
            requests.onNext(request);
        }

        /** Starts reading, as fast as the answers come. */
        void read() {
            requests.request(Integer.MAX_VALUE);
        }

        Queue<ResponseT> answers() {
            return answers;
        }

        Throwable error() {
            return error.get();
        }

        @Override
        public void onNext(ResponseT answer) {
            answers.add(answer);
        }

        @Override
        public void onError(Throwable failure) {
            error.set(failure);
        }

        @Override
        public void onCompleted() {
            error.set(new IllegalStateException("the stream completed"));
        }
    }
}
