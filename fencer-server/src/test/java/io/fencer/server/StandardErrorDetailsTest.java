package io.fencer.server;

import static io.fencer.server.TestServers.acquire;
import static io.fencer.server.TestServers.openSession;
import static io.fencer.server.TestServers.release;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import io.fencer.core.ManualTicker;
import io.fencer.server.TestServers.TestSession;
import io.fencer.api.v1.AcquireRequest;
import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.CallError;
import io.fencer.api.v1.DescribeRequest;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.FencingToken;
import io.fencer.api.v1.KeepAliveRequest;
import io.fencer.api.v1.KeepAliveResponse;
import io.fencer.api.v1.LockInfo;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.Reason;
import io.fencer.api.v1.StoreGrpc;
import io.fencer.api.v1.StorePipelineRequest;
import io.fencer.api.v1.StorePipelineResponse;
import io.fencer.api.v1.WatchRequest;
import io.fencer.api.v1.WriteRequest;
import io.fencer.core.ErrorReason;
import io.fencer.core.Sequencer;
import io.fencer.core.TokenExhaustedException;
import io.fencer.core.TokenKeys;
import io.fencer.server.StoreServiceTest.StoreTesting;
import io.fencer.server.rpc.ErrorCatalogue;
import io.fencer.server.rpc.TestIdentities;
import io.fencer.server.watch.WatchLimits;
import io.fencer.testing.FreePorts;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.protobuf.StatusProto;
import io.grpc.stub.StreamObserver;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Every failed call carries its {@code ErrorDetail} in gRPC's standard rich error model, decoded here as any gRPC
 * library decodes it: grpc-java's own {@link StatusProto} reads the {@code google.rpc.Status} of the
 * {@code grpc-status-details-bin} trailer and unpacks the {@link Any}; no Fencer code reads the answers.
 *
 * <p>Each reason is produced by a real call to a real server (a server with token keys, a peer without quorum, a
 * server closing with an open stream), except TOKEN_EXHAUSTED (a lock's counter at its maximum, out of reach of
 * any test's calls) and INTERNAL (a bug): for those two the server's catalogue builds the failure and a real gRPC
 * server sends it, so the trailers still cross a real HTTP/2 transport.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class StandardErrorDetailsTest {
    private static final long TTL_MILLIS = 60_000;
    private static final String DETAIL_TYPE_URL = "type.googleapis.com/fencer.v1.ErrorDetail";

    private Path dataRoot;
    private final TokenKeys keys = TokenKeys.generate("k1");
    private FencerServer server;
    private ManagedChannel channel;
    private LocksGrpc.LocksBlockingStub locks;
    /** A session whose id an attacker read from a reply; it presents another secret. */
    private TestSession sessionOfAnother;
    private StoreGrpc.StoreBlockingStub store;

    @BeforeAll
    void start(@TempDir Path dataRoot) throws Exception {
        this.dataRoot = dataRoot;
        server = FencerServer.start(TestServers.singlePeer(dataRoot.resolve("main"), new ManualTicker())
                .withTokenKeys(keys));
        channel = TestServers.channel(server);
        locks = TestServers.stub(channel);
        store = StoreTesting.stub(channel);
        TestServers.awaitServing(server, channel);
        sessionOfAnother = openSession(locks, TTL_MILLIS);
    }

    @AfterAll
    void stop() throws Exception {
        TestServers.close(channel);
        server.close();
    }

    @ParameterizedTest
    @EnumSource(ErrorReason.class)
    void failedCall_ofEachReason_carriesItsDetailPackedInGrpcStatusDetailsBin(ErrorReason reason) throws Exception {
        StatusRuntimeException failure = failedCall(reason);

        assertThat(failure.getStatus().getCode()).as("%s", reason).isEqualTo(expectedCode(reason));
        com.google.rpc.Status standard = StatusProto.fromThrowable(failure);
        assertThat(standard).as("grpc-status-details-bin of %s", failure).isNotNull();
        assertThat(standard.getCode()).isEqualTo(failure.getStatus().getCode().value());
        assertThat(standard.getMessage()).isNotEmpty().isEqualTo(failure.getStatus().getDescription());
        assertThat(standard.getDetailsList()).extracting(Any::getTypeUrl).containsExactly(DETAIL_TYPE_URL);
        ErrorDetail detail = standard.getDetails(0).unpack(ErrorDetail.class);
        assertThat(detail.getReason()).isEqualTo(Reason.valueOf("REASON_" + reason.name()));
        assertThat(detail.getMessage()).as("the sentence is the Status's message, sent once").isEmpty();
        assertScenarioFields(reason, detail, standard.getMessage());
    }

    /** The expected status of each reason, written out here rather than asked of the catalogue. */
    private static Status.Code expectedCode(ErrorReason reason) {
        return switch (reason) {
            case INVALID_ARGUMENT -> Status.Code.INVALID_ARGUMENT;
            case LIMIT_EXCEEDED -> Status.Code.RESOURCE_EXHAUSTED;
            case SESSION_EXPIRED, NOT_HOLDER, STALE_TOKEN, SCOPE_MISMATCH, TOKEN_EXHAUSTED, IDEMPOTENCY_MISMATCH,
                    MODE_MISMATCH, MEMBERSHIP_REFUSED -> Status.Code.FAILED_PRECONDITION;
            case BAD_TOKEN_SIGNATURE, SESSION_UNAUTHENTICATED -> Status.Code.UNAUTHENTICATED;
            case PERMISSION_DENIED -> Status.Code.PERMISSION_DENIED;
            case NOT_LEADER, UNAVAILABLE -> Status.Code.UNAVAILABLE;
            case INTERNAL -> Status.Code.INTERNAL;
            case OUT_OF_RANGE -> Status.Code.OUT_OF_RANGE;
        };
    }

    /** Makes a call that fails with {@code reason} and returns its failure. */
    private StatusRuntimeException failedCall(ErrorReason reason) throws Exception {
        return switch (reason) {
            case INVALID_ARGUMENT -> failing(() -> acquire(locks, openSession(locks, TTL_MILLIS), "", 0));
            case LIMIT_EXCEEDED -> failing(() -> locks.describe(DescribeRequest.newBuilder()
                    .setLock("x".repeat(FencerServer.INBOUND_MESSAGE_BYTES_MAX + 1)).build()));
            case SESSION_EXPIRED -> failing(() -> acquire(locks, new TestSession(987_654, "x".repeat(43)), "expired", 0));
            case NOT_HOLDER -> notHolder();
            case STALE_TOKEN -> failing(() -> store.write(staleWrite()));
            case SCOPE_MISMATCH -> scopeMismatch();
            case IDEMPOTENCY_MISMATCH -> idempotencyMismatch();
            case BAD_TOKEN_SIGNATURE -> failing(() -> store.write(StoreTesting.put("signed",
                    Sequencer.format(new io.fencer.core.FencingToken("signed", 5)), "k", "unsigned")));
            case NOT_LEADER -> notLeader();
            case PERMISSION_DENIED -> permissionDenied();
            case SESSION_UNAUTHENTICATED -> failing(() -> acquire(locks, sessionOfAnother.withSecret("x".repeat(43)),
                    "hijacked", 0));
            case UNAVAILABLE -> unavailable();
            case TOKEN_EXHAUSTED, INTERNAL -> fromTheCatalogueOverRealGrpc(reason);
            case MODE_MISMATCH -> modeMismatch();
            case OUT_OF_RANGE -> outOfRange();
            case MEMBERSHIP_REFUSED -> failing(() -> io.fencer.api.v1.PeersGrpc.newBlockingStub(channel)
                    .withInterceptors(TestServers.CALL_DEADLINE).remove(io.fencer.api.v1.RemovePeerRequest.newBuilder()
                            .setId("n1").build())); // the last voter of this group of one
        };
    }

    private void assertScenarioFields(ErrorReason reason, ErrorDetail detail, String message) {
        switch (reason) {
            case INVALID_ARGUMENT -> assertThat(detail.getField()).isEqualTo("lock");
            case LIMIT_EXCEEDED -> assertThat(detail.getLimitValue()).isEqualTo(FencerServer.INBOUND_MESSAGE_BYTES_MAX);
            case SESSION_EXPIRED -> assertThat(detail.getSessionId()).isEqualTo(987_654);
            case NOT_HOLDER -> assertThat(detail.getLock()).isEqualTo("held");
            case STALE_TOKEN -> {
                assertThat(detail.getLock()).isEqualTo("orders");
                assertThat(detail.getPresentedToken()).isPositive().isLessThan(detail.getCurrentToken());
            }
            case SCOPE_MISMATCH -> assertThat(detail.getValue()).isEqualTo("payments");
            case IDEMPOTENCY_MISMATCH -> assertThat(detail.getValue()).isEqualTo("key-1");
            case SESSION_UNAUTHENTICATED -> assertThat(detail.getSessionId()).isEqualTo(sessionOfAnother.id());
            case PERMISSION_DENIED -> {
                assertThat(detail.getIdentity()).isEqualTo("mallory");
                assertThat(detail.getPermission()).isEqualTo("lock");
                assertThat(detail.getLock()).isEqualTo("jobs/nightly");
            }
            case BAD_TOKEN_SIGNATURE -> assertThat(detail.getWhy()).isNotEmpty();
            case NOT_LEADER -> assertThat(detail.getLeaderAddress()).as("no quorum, no leader").isEmpty();
            case UNAVAILABLE -> assertThat(message).isNotEmpty();
            case TOKEN_EXHAUSTED -> assertThat(detail.getCurrentToken()).isEqualTo(
                    io.fencer.core.FencingToken.VALUE_MAX);
            case INTERNAL -> assertThat(message).contains("IllegalStateException", "a bug");
            case MODE_MISMATCH -> {
                assertThat(detail.getLock()).isEqualTo("readers");
                assertThat(detail.getValue()).isEqualTo("shared");
            }
            case MEMBERSHIP_REFUSED -> {
                assertThat(detail.getValue()).as("the peer").isNotEmpty();
                assertThat(detail.getWhy()).contains("last voter");
            }
            case OUT_OF_RANGE -> {
                assertThat(detail.getValue()).isEqualTo("1");
                assertThat(detail.getOldestRevision()).isGreaterThan(1);
            }
        }
    }

    /** A write to the store under a shared-mode (reader) token of a read-write lock. */
    private StatusRuntimeException modeMismatch() {
        TestSession reader = openSession(locks, TTL_MILLIS);
        FencingToken shared = locks.acquire(TestServers.acquireRequest(reader, "readers", "read-1", 0).toBuilder()
                .setMode(io.fencer.api.v1.LockMode.LOCK_MODE_SHARED).build()).getToken();
        return failing(() -> store.write(StoreTesting.put("readers", shared.getSequencer(), "k", "x")));
    }

    private StatusRuntimeException notHolder() {
        TestSession holder = openSession(locks, TTL_MILLIS);
        AcquireResponse held = acquire(locks, holder, "held", 0);
        FencingToken notTheHolders = held.getToken().toBuilder().setValue(held.getToken().getValue() + 1_000)
                .clearSequencer().build();
        return failing(() -> release(locks, holder, notTheHolders));
    }

    /** Returns a write by A's token after B, granted the next token, wrote: the paused-client scenario at the store. */
    private WriteRequest staleWrite() {
        TestSession a = openSession(locks, TTL_MILLIS);
        FencingToken first = acquire(locks, a, "orders", 0).getToken();
        release(locks, a, first);
        TestSession b = openSession(locks, TTL_MILLIS);
        FencingToken second = acquire(locks, b, "orders", 0).getToken();
        store.write(StoreTesting.put("orders", second.getSequencer(), "k", "B"));
        release(locks, b, second);
        return StoreTesting.put("orders", first.getSequencer(), "k", "A");
    }

    private StatusRuntimeException scopeMismatch() {
        FencingToken payments = acquire(locks, openSession(locks, TTL_MILLIS), "payments", 0).getToken();
        return failing(() -> store.write(StoreTesting.put("invoices", payments.getSequencer(), "k", "x")));
    }

    /** A retry with the same idempotency key and token but another value. */
    private StatusRuntimeException idempotencyMismatch() {
        FencingToken token = acquire(locks, openSession(locks, TTL_MILLIS), "retried", 0).getToken();
        store.write(StoreTesting.put("retried", token.getSequencer(), "k", "first").toBuilder()
                .setIdempotencyKey("key-1").build());
        return failing(() -> store.write(StoreTesting.put("retried", token.getSequencer(), "k", "other").toBuilder()
                .setIdempotencyKey("key-1").build()));
    }

    /** An identity the server's ACL grants nothing acquires a lock: refused PERMISSION_DENIED. */
    private StatusRuntimeException permissionDenied() throws Exception {
        Path acl = Files.writeString(dataRoot.resolve("acl.txt"), "alice lock jobs/\n* read *\n* lock warm-up\n");
        try (FencerServer guarded = FencerServer.start(TestServers.singlePeer(dataRoot.resolve("guarded"),
                new ManualTicker()).withAcl(acl), TestIdentities.fromHeader())) {
            ManagedChannel guardedChannel = TestServers.channel(guarded);
            try {
                TestServers.awaitServing(guarded, guardedChannel);
                LocksGrpc.LocksBlockingStub alice = TestServers.stub(guardedChannel)
                        .withInterceptors(TestIdentities.as("alice"));
                TestSession session = openSession(alice, TTL_MILLIS);
                LocksGrpc.LocksBlockingStub mallory = TestServers.stub(guardedChannel)
                        .withInterceptors(TestIdentities.as("mallory"));
                return failing(() -> acquire(mallory, session, "jobs/nightly", 0));
            } finally {
                TestServers.close(guardedChannel);
            }
        }
    }

    /** A Watch from revision 1 on a server that keeps one event and has applied two since. */
    private StatusRuntimeException outOfRange() throws Exception {
        try (FencerServer small = FencerServer.start(TestServers.singlePeer(dataRoot.resolve("small-history"),
                new ManualTicker()).withWatchLimits(new WatchLimits(10, 1)))) {
            ManagedChannel smallChannel = TestServers.channel(small);
            try {
                TestServers.awaitServing(small, smallChannel);
                LocksGrpc.LocksBlockingStub stub = TestServers.stub(smallChannel);
                TestSession session = openSession(stub, TTL_MILLIS);
                release(stub, session, acquire(stub, session, "a", 0).getToken()); // two events: the grant is gone
                return failing(() -> stub.watch(WatchRequest.newBuilder().setFromRevision(1).build()).next());
            } finally {
                TestServers.close(smallChannel);
            }
        }
    }

    /** A peer of three started alone: it has no quorum, so no leader, and answers NOT_LEADER. */
    private StatusRuntimeException notLeader() throws Exception {
        List<ServerConfig.Peer> peers = List.of(
                new ServerConfig.Peer("n1", "127.0.0.1", FreePorts.one(), FreePorts.one()),
                new ServerConfig.Peer("n2", "127.0.0.1", FreePorts.one(), FreePorts.one()),
                new ServerConfig.Peer("n3", "127.0.0.1", FreePorts.one(), FreePorts.one()));
        try (FencerServer lonely = FencerServer.start(ServerConfig.defaults(dataRoot.resolve("lonely"))
                .withPorts(0, 0, 0).withPeers("n1", peers))) {
            ManagedChannel lonelyChannel = TestServers.channel(lonely);
            try {
                return failing(() -> TestServers.describe(TestServers.stub(lonelyChannel), "orders"));
            } finally {
                TestServers.close(lonelyChannel);
            }
        }
    }

    /** A server closing while a keepalive stream is open ends the stream UNAVAILABLE. */
    private StatusRuntimeException unavailable() throws Exception {
        FencerServer closing = FencerServer.start(TestServers.singlePeer(dataRoot.resolve("closing"),
                new ManualTicker()));
        ManagedChannel closingChannel = TestServers.channel(closing);
        try {
            TestServers.awaitServing(closing, closingChannel);
            TestSession session = openSession(TestServers.stub(closingChannel), TTL_MILLIS);
            LinkedBlockingQueue<Object> answers = new LinkedBlockingQueue<>();
            StreamObserver<KeepAliveRequest> requests =
                    LocksGrpc.newStub(closingChannel).keepAlive(TestServers.collecting(answers));
            requests.onNext(KeepAliveRequest.newBuilder().setSessionId(session.id()).setSessionSecret(session.secret())
                    .build());
            assertThat(answers.poll(20, TimeUnit.SECONDS)).isInstanceOf(KeepAliveResponse.class);

            closing.close();

            Object ended = answers.poll(20, TimeUnit.SECONDS);
            assertThat(ended).isInstanceOf(StatusRuntimeException.class);
            return (StatusRuntimeException) ended;
        } finally {
            TestServers.close(closingChannel);
            closing.close();
        }
    }

    /**
     * Returns the failure the server's catalogue makes of a TOKEN_EXHAUSTED refusal (Acquire) or of a bug (any
     * other throwable; Describe), as a real gRPC server on a real port sends it.
     */
    private static StatusRuntimeException fromTheCatalogueOverRealGrpc(ErrorReason reason) throws Exception {
        LocksGrpc.LocksImplBase service = new LocksGrpc.LocksImplBase() {
            @Override
            public void acquire(AcquireRequest request, StreamObserver<AcquireResponse> answer) {
                answer.onError(ErrorCatalogue.toStatusException(new TokenExhaustedException(request.getLock(),
                        io.fencer.core.FencingToken.VALUE_MAX)));
            }

            @Override
            public void describe(DescribeRequest request, StreamObserver<LockInfo> answer) {
                answer.onError(ErrorCatalogue.toStatusException(new IllegalStateException("a bug")));
            }
        };
        Server grpcServer = NettyServerBuilder.forPort(0).addService(service).build().start();
        ManagedChannel grpcChannel = TestServers.channel(grpcServer.getPort());
        try {
            LocksGrpc.LocksBlockingStub stub = TestServers.stub(grpcChannel);
            return reason == ErrorReason.TOKEN_EXHAUSTED
                    ? failing(() -> stub.acquire(AcquireRequest.newBuilder().setLock("worn-out").build()))
                    : failing(() -> stub.describe(DescribeRequest.newBuilder().setLock("any").build()));
        } finally {
            TestServers.close(grpcChannel);
            grpcServer.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
    }

    @Test
    void storePipeline_staleWrite_callErrorStatusIsTheGoogleRpcStatusOfTheUnaryCall() throws Exception {
        WriteRequest stale = staleWrite();
        com.google.rpc.Status unary = StatusProto.fromThrowable(failing(() -> store.write(stale)));

        CallError pipelined = pipelined(StorePipelineRequest.newBuilder().setCallId(1).setWrite(stale).build())
                .getError();

        assertThat(pipelined.hasStatus()).isTrue();
        assertThat(pipelined.getStatus()).isEqualTo(unary);
        // grpc-java's own reading of a google.rpc.Status, as a client of any language reads CallError.status.
        StatusRuntimeException asUnary = StatusProto.toStatusRuntimeException(pipelined.getStatus());
        assertThat(asUnary.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
        ErrorDetail detail = StatusProto.fromThrowable(asUnary).getDetails(0).unpack(ErrorDetail.class);
        assertThat(detail.getReason()).isEqualTo(Reason.REASON_STALE_TOKEN);
        assertThat(detail.getPresentedToken()).isEqualTo(Sequencer.parse(stale.getSequencer(), keys).value());
        assertThat(detail.getCurrentToken()).isGreaterThan(detail.getPresentedToken());
        assertDeprecatedFieldsAgree(pipelined, detail);
    }

    @SuppressWarnings("deprecation") // the deprecated fields are checked on purpose: older clients read them
    private static void assertDeprecatedFieldsAgree(CallError error, ErrorDetail detail) {
        assertThat(error.getStatusCode()).isEqualTo(error.getStatus().getCode());
        assertThat(error.getDescription()).isEqualTo(error.getStatus().getMessage());
        assertThat(error.getDetail()).isEqualTo(detail.toBuilder().setMessage(error.getStatus().getMessage()).build());
    }

    /**
     * Regression guard: a refusal naming the longest value (300 characters of 3-byte UTF-8) in two trailers and
     * the description must stay within the 8 KiB of metadata gRPC clients accept by default, or clients would
     * see a transport error instead of INVALID_ARGUMENT.
     */
    @Test
    void acquire_longestNonAsciiLockName_refusalWithBothTrailersFitsTheDefaultMetadataLimit()
            throws InvalidProtocolBufferException {
        String name = "€".repeat(300);

        StatusRuntimeException failure = failing(() -> acquire(locks, openSession(locks, TTL_MILLIS), name, 0));

        assertThat(failure.getStatus().getCode()).as("%s", failure).isEqualTo(Status.Code.INVALID_ARGUMENT);
        ErrorDetail detail = StatusProto.fromThrowable(failure).getDetails(0).unpack(ErrorDetail.class);
        assertThat(detail.getValue()).isEqualTo(name);
        assertThat(TestServers.detail(failure).getValue()).as("the deprecated trailer arrived too").isEqualTo(name);
    }

    private StorePipelineResponse pipelined(StorePipelineRequest request) throws InterruptedException {
        LinkedBlockingQueue<Object> answers = new LinkedBlockingQueue<>();
        StreamObserver<StorePipelineRequest> requests = StoreGrpc.newStub(channel).pipeline(
                TestServers.collecting(answers));
        try {
            requests.onNext(request);
            Object answer = answers.poll(30, TimeUnit.SECONDS);
            assertThat(answer).isInstanceOf(StorePipelineResponse.class);
            return (StorePipelineResponse) answer;
        } finally {
            requests.onCompleted();
        }
    }

    private static StatusRuntimeException failing(Runnable call) {
        StatusRuntimeException failure = catchThrowableOfType(StatusRuntimeException.class, call::run);
        assertThat(failure).as("the call should have failed").isNotNull();
        return failure;
    }
}
