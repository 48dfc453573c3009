package io.fencer.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.InvalidProtocolBufferException;
import io.fencer.api.errors.WireErrors;
import io.fencer.api.v1.AcquireAllRequest;
import io.fencer.api.v1.AcquireRequest;
import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.AdminGrpc;
import io.fencer.api.v1.CloseSessionRequest;
import io.fencer.api.v1.CloseSessionResponse;
import io.fencer.api.v1.DescribeRequest;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.FencingToken;
import io.fencer.api.v1.KeepAliveRequest;
import io.fencer.api.v1.KeepAliveResponse;
import io.fencer.api.v1.LockInfo;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.OpenSessionRequest;
import io.fencer.api.v1.OpenSessionResponse;
import io.fencer.api.v1.ReleaseRequest;
import io.fencer.api.v1.ReleaseResponse;
import io.fencer.api.v1.StatusRequest;
import io.fencer.core.Ticker;
import io.fencer.lock.LockStateMachine;
import io.fencer.server.raft.GroupSecret;
import io.fencer.server.rpc.TestIdentities;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.MethodDescriptor;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.StatusProto;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.StreamObserver;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;

/** Helpers of the server tests: configs on free ports, channels, stubs, and small call wrappers. */
final class TestServers {
    static final Duration STARTUP_MAX = Duration.ofSeconds(30);

    private TestServers() {}

    /** A session as its opener knows it: the id and the secret OpenSession returned. */
    record TestSession(long id, String secret) {
        /** Returns this session's id with a wrong secret: what an attacker who read the id from a reply holds. */
        TestSession withSecret(String otherSecret) {
            return new TestSession(id, otherSecret);
        }

        @Override
        public String toString() {
            return "TestSession[" + id + "]";
        }
    }

    /**
     * Returns new random bytes for a group secret: every peer of one group in a test is given
     * {@link #groupSecret(byte[])} of the same bytes, and a test that speaks on the Raft port as a peer proves them.
     */
    static byte[] newSecretBytes() {
        byte[] bytes = new byte[GroupSecret.GENERATED_BYTES];
        new SecureRandom().nextBytes(bytes);
        return bytes;
    }

    /** Returns the peer authentication of a group whose secret is {@code bytes}. */
    static PeerAuth groupSecret(byte[] bytes) {
        return PeerAuth.secret(GroupSecret.of(bytes));
    }

    static ServerConfig singlePeer(Path dataDir, Ticker ticker) {
        return ServerConfig.defaults(dataDir).withPorts(0, 0, 0).withTicker(ticker);
    }

    static ManagedChannel channel(FencerServer server) {
        return channel(server.port());
    }

    static ManagedChannel channel(int port) {
        return NettyChannelBuilder.forAddress("127.0.0.1", port).usePlaintext().build();
    }

    /**
     * Returns a blocking stub whose every call has 20 s to finish. The deadline is set per call (a stub's own
     * {@code withDeadlineAfter} fixes one instant for all its calls, so a stub kept in a field for a whole test class
     * expired part-way through on a loaded machine); a stub given a deadline of its own keeps it.
     */
    static LocksGrpc.LocksBlockingStub stub(ManagedChannel channel) {
        return LocksGrpc.newBlockingStub(channel).withInterceptors(CALL_DEADLINE);
    }

    /** Gives each call without a deadline of its own 20 s. */
    static final ClientInterceptor CALL_DEADLINE = new ClientInterceptor() {
        @Override
        public <RequestT, ResponseT> ClientCall<RequestT, ResponseT> interceptCall(
                MethodDescriptor<RequestT, ResponseT> method, CallOptions options, Channel next) {
            return next.newCall(method, options.getDeadline() != null ? options
                    : options.withDeadlineAfter(20, TimeUnit.SECONDS));
        }
    };

    /** Waits until the server leads and serves writes, reads and keepalives. */
    static void awaitServing(FencerServer server, ManagedChannel channel) {
        await().atMost(STARTUP_MAX).pollInterval(Duration.ofMillis(20)).ignoreExceptions().until(() -> {
            stub(channel).describe(DescribeRequest.newBuilder().setLock("warm-up").build());
            KeepAliveResponse answer = keepAliveOnce(channel, Long.MAX_VALUE);
            return server.isLeader() && answer.getExpired();
        });
    }

    /**
     * Waits until a server started under an ACL leads and serves writes, asking as {@code identity} (which the ACL
     * must allow Describe and Status). Leading is not serving: a leader takes writes once it has committed in its
     * term, which the group's format level shows (regression: the first OpenSession once failed "LEADER state but not
     * ready yet").
     */
    static void awaitServingAs(FencerServer server, ManagedChannel channel, String identity) {
        ClientInterceptor as = TestIdentities.as(identity);
        await().atMost(STARTUP_MAX).pollInterval(Duration.ofMillis(20)).ignoreExceptions().until(() -> {
            stub(channel).withInterceptors(as).describe(DescribeRequest.newBuilder().setLock("warm-up").build());
            return server.isLeader() && AdminGrpc.newBlockingStub(channel).withInterceptors(as, CALL_DEADLINE)
                    .status(StatusRequest.getDefaultInstance()).getGroupFormatLevel()
                    == LockStateMachine.FORMAT_LEVEL;
        });
    }

    static TestSession openSession(LocksGrpc.LocksBlockingStub stub, long ttlMillis) {
        OpenSessionResponse opened = stub.openSession(OpenSessionRequest.newBuilder().setTtlMillis(ttlMillis).build());
        assertThat(opened.getSecret()).as("secret of session %d", opened.getSessionId()).hasSize(43);
        return new TestSession(opened.getSessionId(), opened.getSecret());
    }

    static AcquireResponse acquire(LocksGrpc.LocksBlockingStub stub, TestSession session, String lock,
            long waitMillis) {
        return acquire(stub, session, lock, UUID.randomUUID().toString(), waitMillis);
    }

    static AcquireResponse acquire(LocksGrpc.LocksBlockingStub stub, TestSession session, String lock,
            String requestId, long waitMillis) {
        return stub.acquire(acquireRequest(session, lock, requestId, waitMillis));
    }

    static AcquireRequest acquireRequest(TestSession session, String lock, String requestId, long waitMillis) {
        return AcquireRequest.newBuilder().setSessionId(session.id()).setSessionSecret(session.secret())
                .setLock(lock).setRequestId(requestId).setWaitMillis(waitMillis).build();
    }

    /**
     * Returns an AcquireAll of {@code session} under {@code requestId} for the locks {@code name} gives for
     * {@code from} (inclusive) to {@code to} (exclusive), waiting up to {@code waitMillis}.
     */
    static AcquireAllRequest acquireAllRequest(TestSession session, String requestId, long waitMillis,
            IntFunction<String> name, int from, int to) {
        AcquireAllRequest.Builder request = AcquireAllRequest.newBuilder().setSessionId(session.id())
                .setSessionSecret(session.secret()).setRequestId(requestId).setWaitMillis(waitMillis);
        for (int i = from; i < to; i++) {
            request.addLocks(name.apply(i));
        }
        return request.build();
    }

    static ReleaseResponse release(LocksGrpc.LocksBlockingStub stub, TestSession session, FencingToken token) {
        return stub.release(releaseRequest(session, token));
    }

    static ReleaseRequest releaseRequest(TestSession session, FencingToken token) {
        return ReleaseRequest.newBuilder().setToken(token).setSessionId(session.id())
                .setSessionSecret(session.secret()).build();
    }

    static CloseSessionResponse closeSession(LocksGrpc.LocksBlockingStub stub, TestSession session) {
        return stub.closeSession(CloseSessionRequest.newBuilder().setSessionId(session.id())
                .setSessionSecret(session.secret()).build());
    }

    static LockInfo describe(LocksGrpc.LocksBlockingStub stub, String lock) {
        return stub.describe(DescribeRequest.newBuilder().setLock(lock).build());
    }

    static List<Long> waiterSessions(LocksGrpc.LocksBlockingStub stub, String lock) {
        List<Long> sessions = new ArrayList<>();
        describe(stub, lock).getWaitersList().forEach(waiter -> sessions.add(waiter.getSessionId()));
        return sessions;
    }

    /**
     * Returns an observer that puts every message, the error, or {@code "completed"} into {@code answers}, in
     * order: a test reads what a stream said with a timeout.
     */
    static <T> StreamObserver<T> collecting(BlockingQueue<Object> answers) {
        return new StreamObserver<>() {
            @Override
            public void onNext(T message) {
                answers.add(message);
            }

            @Override
            public void onError(Throwable error) {
                answers.add(error);
            }

            @Override
            public void onCompleted() {
                answers.add("completed");
            }
        };
    }

    /** Sends one keepalive for {@code session}, with its secret, on a fresh stream and returns its answer. */
    static KeepAliveResponse keepAliveOnce(ManagedChannel channel, TestSession session) throws InterruptedException {
        return keepAliveOnce(channel, KeepAliveRequest.newBuilder().setSessionId(session.id())
                .setSessionSecret(session.secret()).build());
    }

    /** Sends one keepalive for {@code sessionId}, without a secret, on a fresh stream and returns its answer. */
    static KeepAliveResponse keepAliveOnce(ManagedChannel channel, long sessionId) throws InterruptedException {
        return keepAliveOnce(channel, KeepAliveRequest.newBuilder().setSessionId(sessionId).build());
    }

    static KeepAliveResponse keepAliveOnce(ManagedChannel channel, KeepAliveRequest request)
            throws InterruptedException {
        LinkedBlockingQueue<Object> answers = new LinkedBlockingQueue<>();
        StreamObserver<KeepAliveRequest> requests = LocksGrpc.newStub(channel).keepAlive(collecting(answers));
        requests.onNext(request);
        Object answer = answers.poll(20, TimeUnit.SECONDS);
        requests.onCompleted();
        if (answer instanceof KeepAliveResponse response) {
            return response;
        }
        if (answer instanceof RuntimeException error) {
            throw error;
        }
        throw new AssertionError("no keepalive answer: " + answer);
    }

    /** Runs {@code call}, expects it to fail, and returns the error's detail from the trailer. */
    static ErrorDetail failure(Runnable call) {
        StatusRuntimeException error = catchThrowableOfType(StatusRuntimeException.class, call::run);
        assertThat(error).as("the call should have failed").isNotNull();
        return detail(error);
    }

    /**
     * Returns the error's detail as any gRPC library reads it: packed in the {@code google.rpc.Status} of the
     * standard {@code grpc-status-details-bin} trailer, decoded by grpc-java's own {@link StatusProto}, with that
     * Status's message (the sentence, sent once) as its message. Checks that the status matches the Status and
     * that the deprecated {@code fencer-error-bin} trailer carries the same detail.
     */
    @SuppressWarnings("deprecation") // the deprecated trailer is checked on purpose: older clients read it
    static ErrorDetail detail(StatusRuntimeException error) {
        com.google.rpc.Status standard = StatusProto.fromThrowable(error);
        assertThat(standard).as("grpc-status-details-bin of %s", error).isNotNull();
        assertThat(standard.getCode()).isEqualTo(error.getStatus().getCode().value());
        assertThat(standard.getMessage()).isEqualTo(error.getStatus().getDescription());
        assertThat(standard.getDetailsList()).as("details of %s", error).hasSize(1);
        assertThat(standard.getDetails(0).getTypeUrl()).isEqualTo("type.googleapis.com/fencer.v1.ErrorDetail");
        byte[] legacy = error.getTrailers().get(WireErrors.DETAIL_KEY);
        assertThat(legacy).as("%s of %s", WireErrors.DETAIL_KEY.name(), error).isNotNull();
        try {
            ErrorDetail packed = standard.getDetails(0).unpack(ErrorDetail.class);
            assertThat(packed.getMessage()).as("the sentence travels as the Status's message only").isEmpty();
            assertThat(ErrorDetail.parseFrom(legacy)).as("the deprecated trailer's detail").isEqualTo(packed);
            return packed.toBuilder().setMessage(standard.getMessage()).build();
        } catch (InvalidProtocolBufferException e) {
            throw new AssertionError(e);
        }
    }

    /** Returns the value of the Prometheus line of {@code series} on {@code server}'s admin port. */
    static double metric(FencerServer server, String series) throws Exception {
        java.net.http.HttpClient http = java.net.http.HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10))
                .build();
        java.net.http.HttpRequest request = java.net.http.HttpRequest.newBuilder(java.net.URI.create(
                "http://127.0.0.1:" + server.adminPort() + "/metrics")).timeout(Duration.ofSeconds(20)).GET().build();
        String body = http.send(request, java.net.http.HttpResponse.BodyHandlers.ofString()).body();
        java.util.regex.Matcher matcher = java.util.regex.Pattern.compile("(?m)^"
                + java.util.regex.Pattern.quote(series) + " (\\S+)$").matcher(body);
        if (!matcher.find()) {
            throw new AssertionError("no " + series + " on /metrics:\n" + body);
        }
        return Double.parseDouble(matcher.group(1));
    }

    static void close(ManagedChannel channel) throws InterruptedException {
        channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
}
