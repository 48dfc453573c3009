package io.fencer.server.rpc;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import io.fencer.api.errors.WireErrors;
import io.fencer.api.v1.CallError;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.GetRequest;
import io.fencer.api.v1.GetResponse;
import io.fencer.api.v1.Reason;
import io.fencer.api.v1.StoreGrpc;
import io.fencer.api.v1.StorePipelineRequest;
import io.fencer.api.v1.StorePipelineResponse;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * The flow control of {@link PipelineStream} against a transport whose readiness the test sets: what the stream
 * reads, queues, hands on and ends, step by step. The real transport's side (HTTP/2 windows, gRPC's ready
 * threshold) is covered by {@code StreamFlowControlTest} on a real server; the byte limit is tested here because a
 * real server reaches it only by a race.
 */
class PipelineStreamTest {
    private static final ByteString MEBIBYTE = ByteString.copyFrom(new byte[1024 * 1024]);

    private final Transport transport = new Transport();
    private final StreamFlow flow = new StreamFlow("test.pipeline");
    private final Map<Long, StreamObserver<GetResponse>> calls = new TreeMap<>();
    private final Set<Long> cancelled = new TreeSet<>();
    private final List<PipelineStream<?, ?>> ended = new ArrayList<>();
    private final PipelineStream<StorePipelineRequest, StorePipelineResponse> stream =
            new PipelineStream<>(transport, new Gets(), (method, nanos) -> { }, ended::add, flow);

    @Test
    void send_transportNotReady_answersWaitAndGoInOrderOnceReady() {
        read(1, 2, 3);
        transport.ready = false;

        answer(2, ByteString.EMPTY);
        answer(1, ByteString.EMPTY);
        answer(3, ByteString.EMPTY);
        assertThat(transport.sent).isEmpty();
        assertThat(flow.answersQueued()).isEqualTo(3);

        transport.becomeReady();
        assertThat(transport.sent).extracting(StorePipelineResponse::getCallId).containsExactly(2L, 1L, 3L);
        assertThat(flow.answersQueued()).isZero();
        assertThat(flow.answersQueuedPeak()).isEqualTo(3);
    }

    @Test
    void onNext_transportNotReady_readsNoMoreUntilReady() {
        assertThat(transport.requested).as("the first request").isEqualTo(1);
        read(1);
        assertThat(transport.requested).isEqualTo(2);
        transport.ready = false;

        read(2);
        assertThat(transport.requested).as("no request asked for while answers cannot flow").isEqualTo(2);
        assertThat(flow.streamsPaused()).isEqualTo(1);

        transport.becomeReady();
        assertThat(transport.requested).isEqualTo(3);
        assertThat(flow.streamsPaused()).isZero();
    }

    @Test
    void onNext_queuedAnswersWhileReady_readsOnOnceTheyWent() {
        read(1, 2);
        transport.ready = false;
        answer(1, ByteString.EMPTY);
        transport.ready = true; // the transport took bytes, but its onReady has not run yet

        read(3);
        assertThat(transport.requested).as("an answer waits: no request").isEqualTo(3);

        answer(2, ByteString.EMPTY); // drains the queue: reading resumes without an onReady
        assertThat(transport.sent).extracting(StorePipelineResponse::getCallId).containsExactly(1L, 2L);
        assertThat(transport.requested).isEqualTo(4);
    }

    @Test
    void onNext_largeAnswersDueInFlight_readsNoMoreUntilFewerAreInFlight() {
        read(1);
        answer(1, MEBIBYTE); // the largest answer yet: 1 MiB
        int reads = PipelineStream.ANSWER_BYTES_QUEUED_MAX / MEBIBYTE.size(); // with framing, the last does not fit
        long requestedBefore = transport.requested;
        for (long callId = 2; callId < 2 + reads; callId++) {
            read(callId);
        }
        assertThat(transport.requested).as("a request after each call but the last")
                .isEqualTo(requestedBefore + reads - 1);
        assertThat(flow.streamsPaused()).isEqualTo(1);

        answer(2, MEBIBYTE);
        assertThat(transport.requested).as("one fewer in flight: read on").isEqualTo(requestedBefore + reads);
        assertThat(flow.backlogEnds()).isZero();
    }

    @Test
    void send_answerBytesOverTheLimit_endsResourceExhaustedNamingTheLimitAndCancelsCallsInFlight() throws Exception {
        int reads = PipelineStream.ANSWER_BYTES_QUEUED_MAX / MEBIBYTE.size() + 8;
        for (long callId = 1; callId <= reads; callId++) {
            read(callId); // nothing sized yet: only the calls-in-flight limit binds
        }
        transport.ready = false;

        long callId = 1;
        while (transport.error == null) {
            answer(callId++, MEBIBYTE);
        }

        assertThat(callId - 1).as("answers until the limit").isEqualTo(PipelineStream.ANSWER_BYTES_QUEUED_MAX
                / MEBIBYTE.size());
        StatusRuntimeException error = (StatusRuntimeException) transport.error;
        assertThat(error.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
        assertThat(error.getStatus().getDescription()).contains("test.pipeline", "does not read its answers");
        ErrorDetail detail = WireErrors.detail(error).orElseThrow();
        assertThat(detail.getReason()).isEqualTo(Reason.REASON_LIMIT_EXCEEDED);
        assertThat(detail.getLimit()).isEqualTo("pipelineAnswerBytesQueuedMax");
        assertThat(detail.getLimitValue()).isEqualTo(PipelineStream.ANSWER_BYTES_QUEUED_MAX);
        assertThat(cancelled).as("the calls still in flight").hasSize((int) (reads - (callId - 1)));
        assertThat(transport.sent).isEmpty();
        assertThat(flow.answersQueued()).as("the queue is dropped").isZero();
        assertThat(flow.backlogEnds()).isEqualTo(1);
        assertThat(ended).containsExactly(stream);
        transport.becomeReady();
        assertThat(transport.sent).as("nothing after the end").isEmpty();
    }

    @Test
    void onNext_requestArrivingAfterTheBacklogEnd_isNeverServedUncancelled() {
        int reads = PipelineStream.ANSWER_BYTES_QUEUED_MAX / MEBIBYTE.size() + 8;
        for (long callId = 1; callId <= reads; callId++) {
            read(callId);
        }
        transport.ready = false;
        long callId = 1;
        while (transport.error == null) {
            answer(callId++, MEBIBYTE);
        }
        assertThat(ended).containsExactly(stream);

        // The last request(1) went out before the end: its message may still come (or be in dispatch meanwhile,
        // on the transport's thread, while the end runs on the thread of the answer that passed the limit).
        long late = reads + 1;
        read(late);

        assertThat(calls.containsKey(late) && !cancelled.contains(late))
                .as("call %s served after the stream ended, and never cancelled: its wait would hold a queue place",
                        late).isFalse();
    }

    /** Delivers one Get request per call id, as the transport does after each request(1). */
    private void read(long... callIds) {
        for (long callId : callIds) {
            stream.onNext(StorePipelineRequest.newBuilder().setCallId(callId)
                    .setGet(GetRequest.newBuilder().setScope("s")).build());
        }
    }

    private void answer(long callId, ByteString value) {
        StreamObserver<GetResponse> call = calls.remove(callId);
        call.onNext(GetResponse.newBuilder().setFound(true).setValue(value).build());
        call.onCompleted();
    }

    /** Serves Gets by keeping their observers, for the test to answer; records cancellations. */
    private final class Gets implements PipelineStream.Dispatch<StorePipelineRequest, StorePipelineResponse> {
        @Override
        public void dispatch(StorePipelineRequest request,
                PipelineStream<StorePipelineRequest, StorePipelineResponse> pipeline) {
            long callId = request.getCallId();
            pipeline.serve(callId, StoreGrpc.getGetMethod(), request.getGet(), (get, out) -> {
                ((ServerCallStreamObserver<GetResponse>) out).setOnCancelHandler(() -> cancelled.add(callId));
                calls.put(callId, out);
            }, read -> StorePipelineResponse.newBuilder().setCallId(callId).setGet(read).build());
        }

        @Override
        public StorePipelineResponse errorResponse(long callId, CallError error) {
            return StorePipelineResponse.newBuilder().setCallId(callId).setError(error).build();
        }
    }

    /** A transport whose readiness the test sets; it records what the stream asks of it. */
    private static final class Transport extends ServerCallStreamObserver<StorePipelineResponse> {
        final List<StorePipelineResponse> sent = new ArrayList<>();
        boolean ready = true;
        long requested;
        Throwable error;
        private Runnable onReady;

        void becomeReady() {
            ready = true;
            onReady.run();
        }

        @Override
        public void onNext(StorePipelineResponse response) {
            sent.add(response);
        }

        @Override
        public void onError(Throwable failure) {
            error = failure;
            ready = false; // a closed call is never ready again
        }

        @Override
        public void onCompleted() {
            error = new IllegalStateException("completed");
        }

        @Override
        public boolean isReady() {
            return ready && error == null;
        }

        @Override
        public void setOnReadyHandler(Runnable handler) {
            onReady = handler;
        }

        @Override
        public void request(int count) {
            requested += count;
        }

        @Override
        public boolean isCancelled() {
            return false;
        }

        @Override
        public void setOnCancelHandler(Runnable handler) {
            // The test never cancels the stream.
        }

        @Override
        public void disableAutoRequest() {
            // Requests are counted in request().
        }

        @Override
        public void disableAutoInboundFlowControl() {
            // As disableAutoRequest.
        }

        @Override
        public void setCompression(String compression) {
            // Not a real transport.
        }

        @Override
        public void setMessageCompression(boolean enable) {
            // Not a real transport.
        }
    }
}
