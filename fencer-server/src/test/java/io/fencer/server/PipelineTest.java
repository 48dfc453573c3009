package io.fencer.server;

import static io.fencer.server.TestServers.openSession;
import static io.fencer.server.TestServers.waiterSessions;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.fencer.api.v1.AcquireRequest;
import io.fencer.api.v1.CallError;
import io.fencer.api.v1.CancelCall;
import io.fencer.api.v1.FencingToken;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.PipelineRequest;
import io.fencer.api.v1.PipelineResponse;
import io.fencer.api.v1.Reason;
import io.fencer.api.v1.ReleaseRequest;
import io.fencer.core.ManualTicker;
import io.fencer.server.TestServers.TestSession;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.stub.ClientCallStreamObserver;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code Locks.Pipeline} on one real server: calls on one stream behave as their unary forms, by call id. */
@SuppressWarnings("deprecation") // reads CallError's deprecated fields, which clients of the previous release read
class PipelineTest {
    private static final long TTL_MILLIS = 60_000;
    private static final Duration WAIT_MAX = Duration.ofSeconds(30);

    @TempDir
    Path dataDir;
    private FencerServer server;
    private ManagedChannel channel;
    private LocksGrpc.LocksBlockingStub stub;
    private Pipe pipe;
    private final AtomicLong requestIds = new AtomicLong();

    @BeforeEach
    void start() throws Exception {
        server = FencerServer.start(TestServers.singlePeer(dataDir, new ManualTicker()));
        channel = TestServers.channel(server);
        stub = TestServers.stub(channel);
        TestServers.awaitServing(server, channel);
        pipe = new Pipe(channel);
    }

    @AfterEach
    void stop() throws Exception {
        pipe.close();
        TestServers.close(channel);
        server.close();
    }

    @Test
    void pipeline_acquireAndRelease_answerAsUnaryCallsUnderTheirCallIds() throws Exception {
        TestSession first = openSession(stub, TTL_MILLIS);
        TestSession second = openSession(stub, TTL_MILLIS);

        PipelineResponse granted = pipe.call(1, acquire(first, "orders", 0));
        PipelineResponse busy = pipe.call(2, acquire(second, "orders", 0));
        FencingToken token = granted.getAcquire().getToken();
        PipelineResponse released = pipe.call(3, release(first, token));
        PipelineResponse next = pipe.call(4, acquire(second, "orders", 0));

        assertThat(granted.getCallId()).isEqualTo(1);
        assertThat(granted.getAcquire().getAcquired()).isTrue();
        assertThat(token.getSequencer()).startsWith("fencer1.");
        assertThat(busy.getAcquire().getAcquired()).as("busy for another session").isFalse();
        assertThat(released.getRelease().getReleased()).isEqualTo(token);
        assertThat(next.getAcquire().getToken().getValue()).isGreaterThan(token.getValue());
    }

    @Test
    void pipeline_releaseBySupersededToken_answersNotHolderErrorAndKeepsServing() throws Exception {
        TestSession session = openSession(stub, TTL_MILLIS);
        FencingToken old = pipe.call(1, acquire(session, "jobs", 0)).getAcquire().getToken();
        pipe.call(2, release(session, old));
        FencingToken current = pipe.call(3, acquire(session, "jobs", 0)).getAcquire().getToken();

        CallError error = pipe.call(4, release(session, old)).getError();

        assertThat(error.getStatusCode()).isEqualTo(Status.Code.FAILED_PRECONDITION.value());
        assertThat(error.getDetail().getReason()).isEqualTo(Reason.REASON_NOT_HOLDER);
        assertThat(error.getDetail().getPresentedToken()).isEqualTo(old.getValue());
        assertThat(error.getDetail().getCurrentToken()).isEqualTo(current.getValue());
        assertThat(pipe.call(5, release(session, current)).getRelease().getReleased()).isEqualTo(current);
    }

    @Test
    void pipeline_cancelOfWaitingAcquire_leavesTheQueueUnanswered() throws Exception {
        TestSession holder = openSession(stub, TTL_MILLIS);
        TestSession waiter = openSession(stub, TTL_MILLIS);
        FencingToken held = pipe.call(1, acquire(holder, "queue", 0)).getAcquire().getToken();
        pipe.send(2, acquire(waiter, "queue", 30_000));
        await().atMost(WAIT_MAX).until(() -> waiters("queue").contains(waiter.id()));

        pipe.send(PipelineRequest.newBuilder().setCallId(2).setCancel(CancelCall.getDefaultInstance()).build());
        await().atMost(WAIT_MAX).until(() -> waiters("queue").isEmpty());
        PipelineResponse released = pipe.call(3, release(holder, held));

        assertThat(released.getRelease().hasNext()).as("no waiter left to grant").isFalse();
        assertThat(pipe.received()).as("the cancelled call is never answered").noneMatch(r -> r.getCallId() == 2);
    }

    @Test
    void pipeline_streamCancelledByClient_dropsItsWaitingAcquires() throws Exception {
        TestSession holder = openSession(stub, TTL_MILLIS);
        TestSession waiter = openSession(stub, TTL_MILLIS);
        pipe.call(1, acquire(holder, "stream-end", 0));
        pipe.send(2, acquire(waiter, "stream-end", 30_000));
        await().atMost(WAIT_MAX).until(() -> waiters("stream-end").contains(waiter.id()));

        pipe.cancel();

        await().atMost(WAIT_MAX).until(() -> waiters("stream-end").isEmpty());
    }

    @Test
    void pipeline_malformedCalls_refusedByCallIdWithoutEndingTheStream() throws Exception {
        TestSession holder = openSession(stub, TTL_MILLIS);
        TestSession waiter = openSession(stub, TTL_MILLIS);
        pipe.call(1, acquire(holder, "bad", 0));
        pipe.send(7, acquire(waiter, "bad", 30_000)); // stays in flight
        await().atMost(WAIT_MAX).until(() -> waiters("bad").contains(waiter.id()));

        CallError noCall = pipe.call(PipelineRequest.newBuilder().setCallId(8).build()).getError();
        CallError zeroId = pipe.call(PipelineRequest.newBuilder().setAcquire(acquire(holder, "bad", 0)).build())
                .getError();
        CallError duplicate = pipe.call(PipelineRequest.newBuilder().setCallId(7)
                .setAcquire(acquire(holder, "bad", 0)).build()).getError();
        CallError emptyLock = pipe.call(9, acquire(holder, "", 0)).getError();

        assertThat(noCall.getDetail().getReason()).isEqualTo(Reason.REASON_INVALID_ARGUMENT);
        assertThat(noCall.getDescription()).contains("8");
        assertThat(zeroId.getDetail().getField()).isEqualTo("call_id");
        assertThat(duplicate.getDetail().getField()).isEqualTo("call_id");
        assertThat(duplicate.getDescription()).contains("7", "already in flight");
        assertThat(emptyLock.getStatusCode()).isEqualTo(Status.Code.INVALID_ARGUMENT.value());
        assertThat(emptyLock.getDetail().getField()).isEqualTo("lock");
        assertThat(pipe.call(10, acquire(holder, "bad", 0)).getAcquire().getAcquired()).as("still serving").isTrue();
        assertThat(waiters("bad")).as("call 7 still waits").containsExactly(waiter.id());
    }

    private AcquireRequest acquire(TestSession session, String lock, long waitMillis) {
        return TestServers.acquireRequest(session, lock, "attempt-" + requestIds.incrementAndGet(), waitMillis);
    }

    /** Returns the sessions waiting for {@code lock}, through a stub whose deadline starts now. */
    private List<Long> waiters(String lock) {
        return waiterSessions(TestServers.stub(channel), lock);
    }

    private static ReleaseRequest release(TestSession session, FencingToken token) {
        return TestServers.releaseRequest(session, token);
    }

    /** A raw Pipeline stream: sends requests and collects the answers, which may come in any order. */
    static final class Pipe {
        private final LinkedBlockingQueue<Object> answers = new LinkedBlockingQueue<>();
        private final List<PipelineResponse> received = new ArrayList<>();
        private final ClientCallStreamObserver<PipelineRequest> requests;

        Pipe(ManagedChannel channel) {
            // The stub's request side of a bidirectional call is a ClientCallStreamObserver: it can cancel.
            requests = (ClientCallStreamObserver<PipelineRequest>) LocksGrpc.newStub(channel)
                    .pipeline(TestServers.collecting(answers));
        }

        void send(PipelineRequest request) {
            synchronized (this) {
                requests.onNext(request);
            }
        }

        void send(long callId, AcquireRequest acquire) {
            send(PipelineRequest.newBuilder().setCallId(callId).setAcquire(acquire).build());
        }

        PipelineResponse call(long callId, AcquireRequest acquire) throws InterruptedException {
            return call(PipelineRequest.newBuilder().setCallId(callId).setAcquire(acquire).build());
        }

        PipelineResponse call(long callId, ReleaseRequest release) throws InterruptedException {
            return call(PipelineRequest.newBuilder().setCallId(callId).setRelease(release).build());
        }

        /** Sends {@code request} and returns the answer with its call id; other answers are kept. */
        PipelineResponse call(PipelineRequest request) throws InterruptedException {
            send(request);
            long deadline = System.nanoTime() + WAIT_MAX.toNanos();
            while (true) {
                Object answer = answers.poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                if (!(answer instanceof PipelineResponse response)) {
                    throw new AssertionError("no answer to call " + request.getCallId() + ": " + answer);
                }
                received.add(response);
                if (response.getCallId() == request.getCallId()) {
                    return response;
                }
            }
        }

        List<PipelineResponse> received() {
            List<PipelineResponse> all = new ArrayList<>(received);
            answers.forEach(answer -> {
                if (answer instanceof PipelineResponse response) {
                    all.add(response);
                }
            });
            return all;
        }

        void cancel() {
            requests.cancel("the test cancels the stream", null);
        }

        void close() {
            try {
                requests.onCompleted();
            } catch (IllegalStateException alreadyEnded) {
                // cancelled by the test
            }
        }
    }
}
