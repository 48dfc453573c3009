package io.fencer.server;

import static io.fencer.server.ConnectCalls.parseJson;
import static io.fencer.server.ConnectCalls.parseProto;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.ByteString;
import com.google.protobuf.Message;
import io.fencer.api.v1.AbortUnitRequest;
import io.fencer.api.v1.AbortUnitResponse;
import io.fencer.api.v1.AcquireRequest;
import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.BeginUnitRequest;
import io.fencer.api.v1.BeginUnitResponse;
import io.fencer.api.v1.CloseSessionRequest;
import io.fencer.api.v1.CloseSessionResponse;
import io.fencer.api.v1.CommitUnitRequest;
import io.fencer.api.v1.CreateScopeRequest;
import io.fencer.api.v1.DescribeRequest;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.FenceRequest;
import io.fencer.api.v1.FencingToken;
import io.fencer.api.v1.GetRequest;
import io.fencer.api.v1.GetResponse;
import io.fencer.api.v1.ListRequest;
import io.fencer.api.v1.ListResponse;
import io.fencer.api.v1.LockInfo;
import io.fencer.api.v1.Op;
import io.fencer.api.v1.OpenSessionRequest;
import io.fencer.api.v1.OpenSessionResponse;
import io.fencer.api.v1.Policy;
import io.fencer.api.v1.Put;
import io.fencer.api.v1.Reason;
import io.fencer.api.v1.ReleaseRequest;
import io.fencer.api.v1.ReleaseResponse;
import io.fencer.api.v1.RenewRequest;
import io.fencer.api.v1.RenewResponse;
import io.fencer.api.v1.ScopeInfo;
import io.fencer.api.v1.UnitWriteRequest;
import io.fencer.api.v1.UnitWriteResponse;
import io.fencer.api.v1.ValidateRequest;
import io.fencer.api.v1.ValidateResponse;
import io.fencer.api.v1.WriteRequest;
import io.fencer.api.v1.WriteResponse;
import io.fencer.api.errors.WireErrors;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.StoreGrpc;
import io.fencer.core.ManualTicker;
import io.fencer.server.http.ConnectHttpServerTestAccess;
import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ClientCalls;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.UUID;
import java.util.function.BiFunction;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Every unary method of Locks and Store on the HTTP port, in the Connect protocol, with a plain HTTP client in JSON
 * and in binary, against a real server: the answers, and the Connect error shape of the failures.
 */
class HttpPortTest {
    private static final long TTL_MILLIS = 3_600_000;

    @TempDir
    static Path dataDir;
    private static final ManualTicker TICKER = new ManualTicker();
    private static FencerServer server;
    private static ManagedChannel channel;
    private static ConnectCalls http;

    /** The two codecs, each as a way to post a request and read its answer like a prototype. */
    private enum Codec {
        JSON, PROTO;

        ConnectCalls.Reply post(String method, Message request) {
            return this == JSON ? http.json(method, request) : http.proto(method, request);
        }

        <T extends Message> T call(String method, Message request, T prototype) {
            ConnectCalls.Reply reply = post(method, request);
            return this == JSON ? parseJson(reply, prototype) : parseProto(reply, prototype);
        }
    }

    @BeforeAll
    static void start() throws Exception {
        server = FencerServer.start(TestServers.singlePeer(dataDir, TICKER).withHttpPort(0));
        channel = TestServers.channel(server);
        TestServers.awaitServing(server, channel);
        http = new ConnectCalls(server.httpPort());
    }

    @AfterAll
    static void stop() throws Exception {
        TestServers.close(channel);
        server.close();
    }

    private static OpenSessionResponse open(Codec codec, long ttlMillis) {
        return codec.call("Locks/OpenSession", OpenSessionRequest.newBuilder().setTtlMillis(ttlMillis).build(),
                OpenSessionResponse.getDefaultInstance());
    }

    private static AcquireRequest acquireRequest(OpenSessionResponse session, String lock, long waitMillis) {
        return AcquireRequest.newBuilder().setSessionId(session.getSessionId()).setSessionSecret(session.getSecret())
                .setLock(lock).setRequestId(UUID.randomUUID().toString()).setWaitMillis(waitMillis).build();
    }

    private static FencingToken grant(Codec codec, OpenSessionResponse session, String lock) {
        AcquireResponse acquired = codec.call("Locks/Acquire", acquireRequest(session, lock, 0),
                AcquireResponse.getDefaultInstance());
        assertThat(acquired.getAcquired()).as("acquired %s", lock).isTrue();
        return acquired.getToken();
    }

    /** Asserts that {@code reply} is the Connect error {@code code} with HTTP {@code status} and returns its detail. */
    private static ErrorDetail error(ConnectCalls.Reply reply, int status, String code, Reason reason) {
        assertThat(reply.status()).as("HTTP status of %s", reply.text()).isEqualTo(status);
        assertThat(reply.errorCode()).isEqualTo(code);
        assertThat(reply.json().get("message").getAsString()).isNotEmpty();
        ErrorDetail detail = reply.detail();
        assertThat(detail.getReason()).isEqualTo(reason);
        assertThat(reply.debug().getAsJsonObject().get("reason").getAsString()).isEqualTo(reason.name());
        return detail;
    }

    @Test
    void openSession_jsonAndBinary_returnSessionsWithSecrets() {
        for (Codec codec : Codec.values()) {
            OpenSessionResponse opened = open(codec, 60_000);
            assertThat(opened.getSessionId()).as(codec.name()).isPositive();
            assertThat(opened.getTtlMillis()).isEqualTo(60_000);
            assertThat(opened.getSecret()).hasSize(43);
        }
    }

    @Test
    void openSession_ttlBelowMinimum_isInvalidArgumentNamingTheField() {
        for (Codec codec : Codec.values()) {
            ErrorDetail detail = error(codec.post("Locks/OpenSession",
                    OpenSessionRequest.newBuilder().setTtlMillis(5).build()), 400, "invalid_argument",
                    Reason.REASON_INVALID_ARGUMENT);
            assertThat(detail.getField()).as(codec.name()).isEqualTo("ttl_millis");
        }
    }

    @Test
    void acquire_jsonThenBinaryRetry_grantsTheSameTokenOnce() {
        OpenSessionResponse session = open(Codec.JSON, TTL_MILLIS);
        AcquireRequest request = acquireRequest(session, "http-acquire", 0);
        AcquireResponse first = Codec.JSON.call("Locks/Acquire", request, AcquireResponse.getDefaultInstance());
        AcquireResponse retry = Codec.PROTO.call("Locks/Acquire", request, AcquireResponse.getDefaultInstance());
        assertThat(first.getAcquired()).isTrue();
        assertThat(first.getToken().getValue()).isPositive();
        assertThat(first.getToken().getSequencer()).startsWith("fencer1.");
        assertThat(retry.getToken()).isEqualTo(first.getToken());
    }

    @Test
    void acquire_heldByAnother_answersNotAcquiredWithTheHolder() {
        OpenSessionResponse holder = open(Codec.PROTO, TTL_MILLIS);
        FencingToken token = grant(Codec.PROTO, holder, "http-busy");
        OpenSessionResponse other = open(Codec.JSON, TTL_MILLIS);
        for (Codec codec : Codec.values()) {
            AcquireResponse refused = codec.call("Locks/Acquire", acquireRequest(other, "http-busy", 0),
                    AcquireResponse.getDefaultInstance());
            assertThat(refused.getAcquired()).as(codec.name()).isFalse();
            assertThat(refused.getHolder().getValue()).isEqualTo(token.getValue());
        }
    }

    @Test
    void acquire_wrongSecret_isUnauthenticatedWithSessionUnauthenticated() {
        OpenSessionResponse session = open(Codec.JSON, TTL_MILLIS);
        AcquireRequest forged = acquireRequest(session, "http-forged", 0).toBuilder()
                .setSessionSecret("A".repeat(43)).build();
        for (Codec codec : Codec.values()) {
            ErrorDetail detail = error(codec.post("Locks/Acquire", forged), 401, "unauthenticated",
                    Reason.REASON_SESSION_UNAUTHENTICATED);
            assertThat(detail.getSessionId()).isEqualTo(session.getSessionId());
            assertThat(codec.post("Locks/Acquire", forged).text()).doesNotContain(session.getSecret());
        }
    }

    @Test
    void acquire_closedSession_isFailedPreconditionSessionExpired() {
        OpenSessionResponse session = open(Codec.JSON, TTL_MILLIS);
        parseJson(http.json("Locks/CloseSession", CloseSessionRequest.newBuilder()
                .setSessionId(session.getSessionId()).setSessionSecret(session.getSecret()).build()),
                CloseSessionResponse.getDefaultInstance());
        for (Codec codec : Codec.values()) {
            ErrorDetail detail = error(codec.post("Locks/Acquire", acquireRequest(session, "http-gone", 0)), 400,
                    "failed_precondition", Reason.REASON_SESSION_EXPIRED);
            assertThat(detail.getSessionId()).isEqualTo(session.getSessionId());
        }
    }

    @Test
    void acquire_emptyLockName_isInvalidArgumentNamingTheField() {
        OpenSessionResponse session = open(Codec.JSON, TTL_MILLIS);
        for (Codec codec : Codec.values()) {
            ErrorDetail detail = error(codec.post("Locks/Acquire", acquireRequest(session, "", 0)), 400,
                    "invalid_argument", Reason.REASON_INVALID_ARGUMENT);
            assertThat(detail.getField()).isEqualTo("lock");
        }
    }

    @Test
    void release_byHolderInEitherCodec_releasesAndByOtherSessionIsNotHolder() {
        OpenSessionResponse holder = open(Codec.JSON, TTL_MILLIS);
        OpenSessionResponse other = open(Codec.JSON, TTL_MILLIS);
        for (Codec codec : Codec.values()) {
            String lock = "http-release-" + codec;
            FencingToken token = grant(codec, holder, lock);
            ErrorDetail notHolder = error(codec.post("Locks/Release", ReleaseRequest.newBuilder().setToken(token)
                    .setSessionId(other.getSessionId()).setSessionSecret(other.getSecret()).build()), 400,
                    "failed_precondition", Reason.REASON_NOT_HOLDER);
            assertThat(notHolder.getSessionId()).isEqualTo(other.getSessionId());
            ReleaseResponse released = codec.call("Locks/Release", ReleaseRequest.newBuilder().setToken(token)
                    .setSessionId(holder.getSessionId()).setSessionSecret(holder.getSecret()).build(),
                    ReleaseResponse.getDefaultInstance());
            assertThat(released.getReleased().getValue()).as(codec.name()).isEqualTo(token.getValue());
        }
    }

    @Test
    void renew_openSession_renewsAndUnknownSessionIsExpired() {
        OpenSessionResponse session = open(Codec.JSON, 60_000);
        for (Codec codec : Codec.values()) {
            RenewResponse renewed = codec.call("Locks/Renew", RenewRequest.newBuilder()
                    .setSessionId(session.getSessionId()).setSessionSecret(session.getSecret()).build(),
                    RenewResponse.getDefaultInstance());
            assertThat(renewed.getExpired()).as(codec.name()).isFalse();
            assertThat(renewed.getTtlMillis()).isEqualTo(60_000);
            assertThat(renewed.getSessionId()).isEqualTo(session.getSessionId());
            RenewResponse unknown = codec.call("Locks/Renew", RenewRequest.newBuilder().setSessionId(999_999)
                    .setSessionSecret(session.getSecret()).build(), RenewResponse.getDefaultInstance());
            assertThat(unknown.getExpired()).isTrue();
        }
    }

    @Test
    void renew_keepsSessionAliveAcrossItsTtl_whileAnUnrenewedOneExpires() {
        OpenSessionResponse renewed = open(Codec.JSON, 1_000);
        OpenSessionResponse forgotten = open(Codec.JSON, 1_000);
        for (int step = 0; step < 4; step++) {
            TICKER.advance(Duration.ofMillis(600)); // past the ttl in total, never past it between two renewals
            assertThat(Codec.JSON.call("Locks/Renew", RenewRequest.newBuilder()
                    .setSessionId(renewed.getSessionId()).setSessionSecret(renewed.getSecret()).build(),
                    RenewResponse.getDefaultInstance()).getExpired()).as("renewal %d", step).isFalse();
        }
        await().atMost(Duration.ofSeconds(30)).until(() -> Codec.JSON.call("Locks/Renew",
                RenewRequest.newBuilder().setSessionId(forgotten.getSessionId())
                        .setSessionSecret(forgotten.getSecret()).build(), RenewResponse.getDefaultInstance())
                .getExpired());
    }

    @Test
    void renew_wrongSecretOrNoSessionId_isUnauthenticatedOrInvalidArgument() {
        OpenSessionResponse session = open(Codec.JSON, TTL_MILLIS);
        for (Codec codec : Codec.values()) {
            ErrorDetail refused = error(codec.post("Locks/Renew", RenewRequest.newBuilder()
                    .setSessionId(session.getSessionId()).setSessionSecret("wrong").build()), 401, "unauthenticated",
                    Reason.REASON_SESSION_UNAUTHENTICATED);
            assertThat(refused.getSessionId()).isEqualTo(session.getSessionId());
            ErrorDetail invalid = error(codec.post("Locks/Renew", RenewRequest.newBuilder()
                    .setSessionSecret(session.getSecret()).build()), 400, "invalid_argument",
                    Reason.REASON_INVALID_ARGUMENT);
            assertThat(invalid.getField()).isEqualTo("session_id");
        }
    }

    @Test
    void closeSession_eitherCodec_releasesItsLocks() {
        for (Codec codec : Codec.values()) {
            OpenSessionResponse session = open(codec, TTL_MILLIS);
            FencingToken token = grant(codec, session, "http-close-" + codec);
            CloseSessionResponse closed = codec.call("Locks/CloseSession", CloseSessionRequest.newBuilder()
                    .setSessionId(session.getSessionId()).setSessionSecret(session.getSecret()).build(),
                    CloseSessionResponse.getDefaultInstance());
            assertThat(closed.getReleasedList()).extracting(FencingToken::getValue).containsExactly(token.getValue());
        }
    }

    @Test
    void validateDescribeList_eitherCodec_answerTheHoldersState() {
        OpenSessionResponse session = open(Codec.JSON, TTL_MILLIS);
        FencingToken token = grant(Codec.JSON, session, "http-read/one");
        for (Codec codec : Codec.values()) {
            ValidateResponse validation = codec.call("Locks/Validate", ValidateRequest.newBuilder().setToken(token)
                    .build(), ValidateResponse.getDefaultInstance());
            assertThat(validation.getStatus()).as(codec.name()).isEqualTo(ValidateResponse.Status.CURRENT);
            LockInfo info = codec.call("Locks/Describe", DescribeRequest.newBuilder().setLock("http-read/one")
                    .build(), LockInfo.getDefaultInstance());
            assertThat(info.getHolder().getValue()).isEqualTo(token.getValue());
            assertThat(info.getHolderIdentity()).isEqualTo("anonymous");
            ListResponse listed = codec.call("Locks/List", ListRequest.newBuilder().setPrefix("http-read/").build(),
                    ListResponse.getDefaultInstance());
            assertThat(listed.getLocksList()).extracting(LockInfo::getLock).containsExactly("http-read/one");
        }
    }

    @Test
    void validateDescribeList_invalidFields_areInvalidArgument() {
        for (Codec codec : Codec.values()) {
            assertThat(error(codec.post("Locks/Validate", ValidateRequest.getDefaultInstance()), 400,
                    "invalid_argument", Reason.REASON_INVALID_ARGUMENT).getField()).startsWith("token");
            assertThat(error(codec.post("Locks/Describe", DescribeRequest.newBuilder().setLock("x".repeat(300))
                    .build()), 400, "invalid_argument", Reason.REASON_INVALID_ARGUMENT).getField()).isEqualTo("lock");
            assertThat(error(codec.post("Locks/List", ListRequest.newBuilder().setLimit(5_000).build()), 400,
                    "invalid_argument", Reason.REASON_INVALID_ARGUMENT).getField()).isEqualTo("limit");
        }
    }

    private static WriteRequest put(String scope, String sequencer, String key, String value) {
        return WriteRequest.newBuilder().setScope(scope).setSequencer(sequencer)
                .addOps(Op.newBuilder().setPut(Put.newBuilder().setKey(ByteString.copyFromUtf8(key))
                        .setValue(ByteString.copyFromUtf8(value)))).build();
    }

    @Test
    void storeWriteGetFenceCreateScope_eitherCodec_fenceStaleTokens() {
        for (Codec codec : Codec.values()) {
            String scope = "http-store-" + codec;
            OpenSessionResponse first = open(codec, TTL_MILLIS);
            FencingToken old = grant(codec, first, scope);
            ScopeInfo created = codec.call("Store/CreateScope", CreateScopeRequest.newBuilder().setScope(scope)
                    .setPolicy(Policy.POLICY_AT_LEAST).setSequencer(old.getSequencer()).build(),
                    ScopeInfo.getDefaultInstance());
            assertThat(created.getExists()).as(codec.name()).isTrue();
            codec.call("Locks/Release", ReleaseRequest.newBuilder().setToken(old).setSessionId(first.getSessionId())
                    .setSessionSecret(first.getSecret()).build(), ReleaseResponse.getDefaultInstance());
            FencingToken current = grant(codec, open(codec, TTL_MILLIS), scope);
            WriteResponse written = codec.call("Store/Write", put(scope, current.getSequencer(), "k", "new"),
                    WriteResponse.getDefaultInstance());
            assertThat(written.getAccepted()).isEqualTo(current.getValue());
            ErrorDetail stale = error(codec.post("Store/Write", put(scope, old.getSequencer(), "k", "old")), 400,
                    "failed_precondition", Reason.REASON_STALE_TOKEN);
            assertThat(stale.getPresentedToken()).isEqualTo(old.getValue());
            assertThat(stale.getCurrentToken()).isEqualTo(current.getValue());
            GetResponse read = codec.call("Store/Get", GetRequest.newBuilder().setScope(scope)
                    .setKey(ByteString.copyFromUtf8("k")).build(), GetResponse.getDefaultInstance());
            assertThat(read.getValue().toString(StandardCharsets.UTF_8)).isEqualTo("new");
            ScopeInfo fenced = codec.call("Store/Fence", FenceRequest.newBuilder().setScope(scope).build(),
                    ScopeInfo.getDefaultInstance());
            assertThat(fenced.getAccepted()).isEqualTo(current.getValue());
        }
    }

    /**
     * Asserts that {@code request} fails on the HTTP port, in both codecs, exactly as on the gRPC port: the same code,
     * message and ErrorDetail. Returns the detail.
     */
    @SuppressWarnings("unchecked")
    private static ErrorDetail sameFailureAsGrpc(String method, Message request) {
        MethodDescriptor<Message, Message> grpcMethod = Stream.of(LocksGrpc.getServiceDescriptor(),
                StoreGrpc.getServiceDescriptor()).flatMap(service -> service.getMethods().stream())
                .filter(candidate -> candidate.getFullMethodName().equals("fencer.v1." + method))
                .map(candidate -> (MethodDescriptor<Message, Message>) candidate).findFirst().orElseThrow();
        StatusRuntimeException overGrpc = catchThrowableOfType(StatusRuntimeException.class, () ->
                ClientCalls.blockingUnaryCall(channel, grpcMethod, CallOptions.DEFAULT.withDeadlineAfter(20,
                        TimeUnit.SECONDS), request));
        assertThat(overGrpc).as("%s fails over gRPC", method).isNotNull();
        ErrorDetail grpcDetail = WireErrors.detail(overGrpc).orElseThrow().toBuilder().clearMessage().build();
        for (Codec codec : Codec.values()) {
            ConnectCalls.Reply reply = codec.post(method, request);
            assertThat(reply.status()).as("%s %s: %s", method, codec, reply.text())
                    .isEqualTo(ConnectHttpServerTestAccess.httpStatus(overGrpc.getStatus().getCode()));
            assertThat(reply.errorCode()).isEqualTo(overGrpc.getStatus().getCode().name().toLowerCase(Locale.ROOT));
            assertThat(reply.json().get("message").getAsString()).isEqualTo(overGrpc.getStatus().getDescription());
            assertThat(reply.detail().toBuilder().clearMessage().build()).isEqualTo(grpcDetail);
        }
        return grpcDetail;
    }

    @Test
    void failures_ofEveryMethod_areTheGrpcPortsFailuresInConnectForm() {
        OpenSessionResponse session = open(Codec.JSON, TTL_MILLIS);
        OpenSessionResponse other = open(Codec.JSON, TTL_MILLIS);
        FencingToken token = grant(Codec.JSON, session, "http-same");
        String forged = "B".repeat(43);
        assertThat(sameFailureAsGrpc("Locks/OpenSession", OpenSessionRequest.newBuilder().setTtlMillis(1).build())
                .getReason()).isEqualTo(Reason.REASON_INVALID_ARGUMENT);
        assertThat(sameFailureAsGrpc("Locks/CloseSession", CloseSessionRequest.newBuilder()
                .setSessionId(session.getSessionId()).setSessionSecret(forged).build()).getReason())
                .isEqualTo(Reason.REASON_SESSION_UNAUTHENTICATED);
        assertThat(sameFailureAsGrpc("Locks/Acquire", acquireRequest(session, "http-same", 0).toBuilder()
                .setSessionSecret(forged).build()).getReason()).isEqualTo(Reason.REASON_SESSION_UNAUTHENTICATED);
        assertThat(sameFailureAsGrpc("Locks/Release", ReleaseRequest.newBuilder().setToken(token)
                .setSessionId(other.getSessionId()).setSessionSecret(other.getSecret()).build()).getReason())
                .isEqualTo(Reason.REASON_NOT_HOLDER);
        assertThat(sameFailureAsGrpc("Locks/Renew", RenewRequest.newBuilder().setSessionId(session.getSessionId())
                .setSessionSecret(forged).build()).getReason()).isEqualTo(Reason.REASON_SESSION_UNAUTHENTICATED);
        assertThat(sameFailureAsGrpc("Locks/Validate", ValidateRequest.newBuilder().setToken(token.toBuilder()
                .setLock("")).build()).getReason()).isEqualTo(Reason.REASON_INVALID_ARGUMENT);
        assertThat(sameFailureAsGrpc("Locks/Describe", DescribeRequest.getDefaultInstance()).getReason())
                .isEqualTo(Reason.REASON_INVALID_ARGUMENT);
        assertThat(sameFailureAsGrpc("Locks/List", ListRequest.newBuilder().setLimit(1_001).build()).getReason())
                .isEqualTo(Reason.REASON_INVALID_ARGUMENT);
        assertThat(sameFailureAsGrpc("Store/Write", put("http-same", "fencer1.bad", "k", "v")).getReason())
                .isEqualTo(Reason.REASON_INVALID_ARGUMENT);
        assertThat(sameFailureAsGrpc("Store/Get", GetRequest.newBuilder().setScope("").build()).getReason())
                .isEqualTo(Reason.REASON_INVALID_ARGUMENT);
        assertThat(sameFailureAsGrpc("Store/Fence", FenceRequest.getDefaultInstance()).getReason())
                .isEqualTo(Reason.REASON_INVALID_ARGUMENT);
        assertThat(sameFailureAsGrpc("Store/CreateScope", CreateScopeRequest.getDefaultInstance()).getReason())
                .isEqualTo(Reason.REASON_INVALID_ARGUMENT);
        assertThat(sameFailureAsGrpc("Store/BeginUnit", BeginUnitRequest.newBuilder().setScope("http-same")
                .setSequencer(token.getSequencer()).build()).getReason()).isEqualTo(Reason.REASON_INVALID_ARGUMENT);
        sameFailureAsGrpc("Store/UnitWrite", UnitWriteRequest.newBuilder().setUnitId("no-such-unit")
                .addAllOps(put("http-same", "", "k", "v").getOpsList()).build());
        sameFailureAsGrpc("Store/CommitUnit", CommitUnitRequest.newBuilder().setUnitId("no-such-unit").build());
    }

    @Test
    void storeGet_withSupersededSequencer_isStaleLikeAWrite() {
        String scope = "http-fenced-read";
        OpenSessionResponse first = open(Codec.JSON, TTL_MILLIS);
        FencingToken old = grant(Codec.JSON, first, scope);
        Codec.JSON.call("Locks/CloseSession", CloseSessionRequest.newBuilder().setSessionId(first.getSessionId())
                .setSessionSecret(first.getSecret()).build(), CloseSessionResponse.getDefaultInstance());
        FencingToken current = grant(Codec.JSON, open(Codec.JSON, TTL_MILLIS), scope);
        Codec.PROTO.call("Store/Write", put(scope, current.getSequencer(), "k", "v"),
                WriteResponse.getDefaultInstance());
        ErrorDetail stale = sameFailureAsGrpc("Store/Get", GetRequest.newBuilder().setScope(scope)
                .setKey(ByteString.copyFromUtf8("k")).setSequencer(old.getSequencer()).build());
        assertThat(stale.getReason()).isEqualTo(Reason.REASON_STALE_TOKEN);
        assertThat(stale.getCurrentToken()).isEqualTo(current.getValue());
    }

    @Test
    void storeUnits_eitherCodec_commitAndAbort() {
        for (Codec codec : Codec.values()) {
            String scope = "http-unit-" + codec;
            FencingToken token = grant(codec, open(codec, TTL_MILLIS), scope);
            BiFunction<String, Long, BeginUnitResponse> begin = (sequencer, timeoutMillis) -> codec.call(
                    "Store/BeginUnit", BeginUnitRequest.newBuilder().setScope(scope).setSequencer(sequencer)
                            .setTimeoutMillis(timeoutMillis).build(), BeginUnitResponse.getDefaultInstance());
            BeginUnitResponse unit = begin.apply(token.getSequencer(), 30_000L);
            UnitWriteResponse buffered = codec.call("Store/UnitWrite", UnitWriteRequest.newBuilder()
                    .setUnitId(unit.getUnitId()).addAllOps(put(scope, "", "u", "v").getOpsList()).build(),
                    UnitWriteResponse.getDefaultInstance());
            assertThat(buffered.getOpsBuffered()).as(codec.name()).isEqualTo(1);
            WriteResponse committed = codec.call("Store/CommitUnit", CommitUnitRequest.newBuilder()
                    .setUnitId(unit.getUnitId()).build(), WriteResponse.getDefaultInstance());
            assertThat(committed.getOpsApplied()).isEqualTo(1);
            BeginUnitResponse second = begin.apply(token.getSequencer(), 30_000L);
            AbortUnitResponse aborted = codec.call("Store/AbortUnit", AbortUnitRequest.newBuilder()
                    .setUnitId(second.getUnitId()).build(), AbortUnitResponse.getDefaultInstance());
            assertThat(aborted.getAborted()).isTrue();
            assertThat(error(codec.post("Store/BeginUnit", BeginUnitRequest.newBuilder().setScope(scope)
                    .setSequencer(token.getSequencer()).setTimeoutMillis(0).build()), 400, "invalid_argument",
                    Reason.REASON_INVALID_ARGUMENT).getField()).isEqualTo("timeout_millis");
        }
    }
}
