package io.fencer.server;

import static io.fencer.server.TestServers.acquire;
import static io.fencer.server.TestServers.acquireRequest;
import static io.fencer.server.TestServers.describe;
import static io.fencer.server.TestServers.keepAliveOnce;
import static io.fencer.server.TestServers.openSession;
import static io.fencer.server.TestServers.release;
import static io.fencer.server.TestServers.releaseRequest;
import static io.fencer.server.TestServers.waiterSessions;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.awaitility.Awaitility.await;

import com.google.common.util.concurrent.ListenableFuture;
import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.CallError;
import io.fencer.api.v1.CloseSessionRequest;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.FencingToken;
import io.fencer.api.v1.KeepAliveRequest;
import io.fencer.api.v1.KeepAliveResponse;
import io.fencer.api.v1.LockInfo;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.Reason;
import io.fencer.api.v1.ReleaseRequest;
import io.fencer.core.ManualTicker;
import io.fencer.server.TestServers.TestSession;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Each way the first release let any client act as a holder, tried as an attacker would: with a raw stub built from
 * the .proto, the holder's session id (a small sequential number) and no secret, a guessed one, or the attacker's own
 * session's. Every attempt must be refused, name the session and change nothing: the holder keeps its lock, its
 * keepalives keep working, and a queued waiter is not granted.
 */
class SessionHijackTest {
    private static final long TTL_MILLIS = 60_000;
    private static final long SHORT_TTL_MILLIS = 5_000;
    private static final Duration WAIT_MAX = Duration.ofSeconds(30);
    private static final String LOCK = "payroll";

    @TempDir
    Path dataDir;
    private final ManualTicker ticker = new ManualTicker();
    private FencerServer server;
    private ManagedChannel channel;
    private LocksGrpc.LocksBlockingStub stub;
    private TestSession holder;
    private TestSession attacker;
    private TestSession waiter;
    private FencingToken held;
    private ListenableFuture<AcquireResponse> waiting;

    @BeforeEach
    void start() throws Exception {
        server = FencerServer.start(TestServers.singlePeer(dataDir, ticker));
        channel = TestServers.channel(server);
        stub = TestServers.stub(channel);
        TestServers.awaitServing(server, channel);
        holder = openSession(stub, TTL_MILLIS);
        attacker = openSession(stub, TTL_MILLIS);
        waiter = openSession(stub, TTL_MILLIS);
        held = acquire(stub, holder, LOCK, 0).getToken();
        waiting = LocksGrpc.newFutureStub(channel).withDeadlineAfter(60, TimeUnit.SECONDS)
                .acquire(acquireRequest(waiter, LOCK, "waiter", 45_000));
        await().atMost(WAIT_MAX).until(() -> waiterSessions(stub, LOCK).contains(waiter.id()));
    }

    @AfterEach
    void stop() throws Exception {
        waiting.cancel(true);
        TestServers.close(channel);
        server.close();
    }

    @Test
    void acquire_withAnotherSessionsIdWithoutOrWithWrongSecret_isUnauthenticatedNamingTheIdAndGrantsNothing() {
        TestSession noSecret = holder.withSecret("");
        TestSession attackersSecret = holder.withSecret(attacker.secret());
        long lastTokenBefore = describe(stub, "free").getLastToken();

        for (TestSession forged : new TestSession[] {noSecret, attackersSecret}) {
            assertUnauthenticated(() -> acquire(stub, forged, LOCK, 0), holder.id());
            assertUnauthenticated(() -> acquire(stub, forged, "free", 0), holder.id());
            assertUnauthenticated(() -> acquire(stub, forged, "free", 10_000), holder.id());
        }

        LockInfo free = describe(stub, "free");
        assertThat(free.hasHolder()).as("no grant of a free lock").isFalse();
        assertThat(free.getWaitersList()).as("no wait queued").isEmpty();
        assertThat(free.getLastToken()).as("no token issued").isEqualTo(lastTokenBefore);
        assertHolderIntact();
    }

    @Test
    void acquire_pipelinedWithAnotherSessionsId_isUnauthenticatedNamingTheIdAndGrantsNothing() throws Exception {
        PipelineTest.Pipe pipe = new PipelineTest.Pipe(channel);
        try {
            CallError noSecret = pipe.call(1, acquireRequest(holder.withSecret(""), LOCK, "p1", 0)).getError();
            CallError wrong = pipe.call(2, acquireRequest(holder.withSecret(attacker.secret()), "free", "p2", 0))
                    .getError();
            CallError waitingWrong = pipe.call(3, acquireRequest(holder.withSecret("guess"), "free", "p3", 5_000))
                    .getError();

            for (CallError error : new CallError[] {noSecret, wrong, waitingWrong}) {
                assertUnauthenticated(error, holder.id());
            }
            assertThat(describe(stub, "free").hasHolder()).isFalse();
            assertThat(describe(stub, "free").getWaitersList()).isEmpty();
            assertThat(pipe.call(4, acquireRequest(attacker, "free", "p4", 0)).getAcquire().getAcquired())
                    .as("the stream still serves its caller's own session").isTrue();
        } finally {
            pipe.close();
        }
        assertHolderIntact();
    }

    @Test
    void release_byTokenAloneOrByAnotherSession_isRefusedAndTheHolderKeepsTheLock() {
        FencingToken sequencerOnly = FencingToken.newBuilder().setSequencer(held.getSequencer()).build();

        ErrorDetail tokenAlone = TestServers.failure(() -> stub.release(ReleaseRequest.newBuilder().setToken(held)
                .build()));
        assertUnauthenticated(() -> release(stub, holder.withSecret(""), held), holder.id());
        assertUnauthenticated(() -> release(stub, holder.withSecret(attacker.secret()), sequencerOnly), holder.id());
        StatusRuntimeException byOther = catchThrowableOfType(StatusRuntimeException.class,
                () -> release(stub, attacker, held));

        assertThat(tokenAlone.getReason()).isEqualTo(Reason.REASON_INVALID_ARGUMENT);
        assertThat(tokenAlone.getField()).isEqualTo("session_id");
        assertThat(byOther.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
        ErrorDetail notHolder = TestServers.detail(byOther);
        assertThat(notHolder.getReason()).isEqualTo(Reason.REASON_NOT_HOLDER);
        assertThat(notHolder.getSessionId()).isEqualTo(attacker.id());
        assertThat(notHolder.getPresentedToken()).isEqualTo(held.getValue());
        assertThat(notHolder.getCurrentToken()).isEqualTo(held.getValue());
        assertThat(notHolder.getMessage()).contains("not held by session " + attacker.id());
        assertHolderIntact();
    }

    @Test
    void release_pipelinedByTokenAloneOrByAnotherSession_isRefusedAndTheHolderKeepsTheLock() throws Exception {
        PipelineTest.Pipe pipe = new PipelineTest.Pipe(channel);
        try {
            CallError tokenAlone = pipe.call(1, ReleaseRequest.newBuilder().setToken(held).build()).getError();
            CallError noSecret = pipe.call(2, releaseRequest(holder.withSecret(""), held)).getError();
            CallError wrong = pipe.call(3, releaseRequest(holder.withSecret(attacker.secret()), held)).getError();
            CallError byOther = pipe.call(4, releaseRequest(attacker, held)).getError();

            assertThat(tokenAlone.getStatusCode()).isEqualTo(Status.Code.INVALID_ARGUMENT.value());
            assertThat(tokenAlone.getDetail().getField()).isEqualTo("session_id");
            assertUnauthenticated(noSecret, holder.id());
            assertUnauthenticated(wrong, holder.id());
            assertThat(byOther.getStatusCode()).isEqualTo(Status.Code.FAILED_PRECONDITION.value());
            assertThat(byOther.getDetail().getReason()).isEqualTo(Reason.REASON_NOT_HOLDER);
            assertThat(byOther.getDetail().getSessionId()).isEqualTo(attacker.id());
        } finally {
            pipe.close();
        }
        assertHolderIntact();
    }

    @Test
    void keepAlive_ofAnotherSessionsId_isRefusedOnAnOpenStreamAndDoesNotExtendTheLease() throws Exception {
        TestSession victim = openSession(stub, SHORT_TTL_MILLIS);
        acquire(stub, victim, "short-lived", 0);
        LinkedBlockingQueue<Object> answers = new LinkedBlockingQueue<>();
        StreamObserver<KeepAliveRequest> stream = LocksGrpc.newStub(channel).keepAlive(
                TestServers.collecting(answers));
        try {
            KeepAliveResponse noSecret = keepAlive(stream, answers, victim.withSecret(""));
            KeepAliveResponse wrong = keepAlive(stream, answers, victim.withSecret(attacker.secret()));
            KeepAliveResponse own = keepAlive(stream, answers, attacker);

            for (KeepAliveResponse refused : new KeepAliveResponse[] {noSecret, wrong}) {
                assertThat(refused.getSessionId()).isEqualTo(victim.id());
                assertThat(refused.getExpired()).as("the session is open, only not the caller's").isFalse();
                assertThat(refused.getTtlMillis()).as("nothing renewed").isZero();
                assertUnauthenticated(refused.getError(), victim.id());
            }
            assertThat(own.hasError()).as("the stream stays open for the caller's own sessions").isFalse();
            assertThat(own.getTtlMillis()).isEqualTo(TTL_MILLIS);

            // Only refused keepalives for the victim from here: its lease must end at its first deadline.
            ticker.advance(Duration.ofMillis(SHORT_TTL_MILLIS - 1_000));
            assertUnauthenticated(keepAlive(stream, answers, victim.withSecret(attacker.secret())).getError(),
                    victim.id());
            ticker.advance(Duration.ofMillis(2_000));

            await().atMost(WAIT_MAX).until(() -> !describe(stub, "short-lived").hasHolder());
            assertThat(keepAliveOnce(channel, victim).getExpired()).isTrue();
        } finally {
            stream.onCompleted();
        }
    }

    @Test
    void closeSession_ofAnotherSessionsId_isUnauthenticatedAndTheLocksAreKept() {
        for (String forgedSecret : new String[] {"", attacker.secret()}) {
            assertUnauthenticated(() -> stub.closeSession(CloseSessionRequest.newBuilder()
                    .setSessionId(holder.id()).setSessionSecret(forgedSecret).build()), holder.id());
        }

        assertHolderIntact();
        assertThat(TestServers.closeSession(stub, holder).getReleasedList()).extracting(FencingToken::getValue)
                .as("its opener still closes it").containsExactly(held.getValue());
    }

    /** The holder still holds its grant, its keepalives still renew its lease, and the waiter still waits. */
    private void assertHolderIntact() {
        LockInfo info = describe(stub, LOCK);
        assertThat(info.getHolder().getValue()).as("holder's token").isEqualTo(held.getValue());
        assertThat(info.getWaitersList()).extracting(io.fencer.api.v1.Waiter::getSessionId)
                .as("the waiter was not granted").containsExactly(waiter.id());
        assertThat(waiting.isDone()).isFalse();
        KeepAliveResponse kept;
        try {
            kept = keepAliveOnce(channel, holder);
        } catch (InterruptedException e) {
            throw new AssertionError(e);
        }
        assertThat(kept.getExpired()).isFalse();
        assertThat(kept.hasError()).isFalse();
        assertThat(kept.getTtlMillis()).isEqualTo(TTL_MILLIS);
    }

    private static KeepAliveResponse keepAlive(StreamObserver<KeepAliveRequest> stream,
            LinkedBlockingQueue<Object> answers, TestSession session) throws InterruptedException {
        stream.onNext(KeepAliveRequest.newBuilder().setSessionId(session.id()).setSessionSecret(session.secret())
                .build());
        Object answer = answers.poll(WAIT_MAX.toMillis(), TimeUnit.MILLISECONDS);
        assertThat(answer).as("keepalive answer for session %d", session.id()).isInstanceOf(KeepAliveResponse.class);
        return (KeepAliveResponse) answer;
    }

    static void assertUnauthenticated(Runnable call, long sessionId) {
        StatusRuntimeException error = catchThrowableOfType(StatusRuntimeException.class, call::run);
        assertThat(error).as("the call should have been refused").isNotNull();
        assertThat(error.getStatus().getCode()).isEqualTo(Status.Code.UNAUTHENTICATED);
        assertDetail(TestServers.detail(error), sessionId);
    }

    static void assertUnauthenticated(CallError error, long sessionId) {
        assertThat(error.getStatusCode()).isEqualTo(Status.Code.UNAUTHENTICATED.value());
        assertDetail(error.getDetail(), sessionId);
    }

    private static void assertDetail(ErrorDetail detail, long sessionId) {
        assertThat(detail.getReason()).isEqualTo(Reason.REASON_SESSION_UNAUTHENTICATED);
        assertThat(detail.getSessionId()).isEqualTo(sessionId);
        assertThat(detail.getMessage()).contains("session " + sessionId);
    }
}
