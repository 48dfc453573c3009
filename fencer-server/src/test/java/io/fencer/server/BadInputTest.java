package io.fencer.server;

import static io.fencer.server.TestServers.acquire;
import static io.fencer.server.TestServers.describe;
import static io.fencer.server.TestServers.failure;
import static io.fencer.server.TestServers.openSession;
import static io.fencer.server.TestServers.release;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.awaitility.Awaitility.await;

import com.google.common.util.concurrent.ListenableFuture;
import com.google.protobuf.CodedOutputStream;
import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.FencingToken;
import io.fencer.api.v1.ListRequest;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.OpenSessionRequest;
import io.fencer.api.v1.Reason;
import io.fencer.api.v1.ValidateRequest;
import io.fencer.core.ManualTicker;
import io.fencer.lock.Limits;
import io.fencer.server.TestServers.TestSession;
import io.grpc.CallOptions;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.ProtoUtils;
import io.grpc.stub.ClientCalls;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Malformed and over-limit requests: each refused with a typed detail naming the value; nothing changes. */
class BadInputTest {
    private static final long TTL_MILLIS = 60_000;
    private static final Limits SMALL_LIMITS = new Limits(3, 1_000, 1, 100, 1_000, 3_600_000);

    @TempDir
    Path dataDir;
    private FencerServer server;
    private ManagedChannel channel;
    private LocksGrpc.LocksBlockingStub stub;
    private TestSession holder;
    private AcquireResponse held;

    @BeforeEach
    void start() throws Exception {
        server = FencerServer.start(TestServers.singlePeer(dataDir, new ManualTicker())
                .withLimits(SMALL_LIMITS));
        channel = TestServers.channel(server);
        stub = TestServers.stub(channel);
        TestServers.awaitServing(server, channel);
        holder = openSession(stub, TTL_MILLIS);
        held = acquire(stub, holder, "precious", 0);
    }

    @AfterEach
    void stop() throws Exception {
        // Whatever was sent, the server still serves and the held lock is intact.
        assertThat(describe(stub, "precious").getHolder()).isEqualTo(held.getToken());
        assertThat(acquire(stub, holder, "after", 0).getAcquired()).isTrue();
        TestServers.close(channel);
        server.close();
    }

    @Test
    void acquire_withBadLockNames_isInvalidArgumentNamingTheValue() {
        String tooLong = "x".repeat(257);
        ErrorDetail empty = failure(() -> acquire(stub, holder, "", 0));
        ErrorDetail long257 = failure(() -> acquire(stub, holder, tooLong, 0));
        ErrorDetail control = failure(() -> acquire(stub, holder, "bad\nname", 0));

        assertInvalid(empty, "lock", "");
        assertInvalid(long257, "lock", tooLong);
        assertThat(long257.getMessage()).contains("257 bytes");
        assertInvalid(control, "lock", "bad\nname");
    }

    @Test
    void acquire_ofNamesWithInvisibleOrBidiCharacters_isInvalidArgumentNamingTheCodePointAndPosition() {
        ErrorDetail bidi = failure(() -> acquire(stub, holder, "jobs/\u202Enightly", 0));
        ErrorDetail zeroWidth = failure(() -> stub.acquirePermit(io.fencer.api.v1.AcquirePermitRequest.newBuilder()
                .setSessionId(holder.id()).setSessionSecret(holder.secret()).setSemaphore("po\u200Dol")
                .setPermits(2).setRequestId("p").build()));
        ErrorDetail inMultiLock = failure(() -> stub.acquireAll(io.fencer.api.v1.AcquireAllRequest.newBuilder()
                .setSessionId(holder.id()).setSessionSecret(holder.secret()).addLocks("plain")
                .addLocks("\uFEFFplain").setRequestId("m").build()));

        assertThat(bidi.getReason()).isEqualTo(Reason.REASON_INVALID_ARGUMENT);
        assertThat(bidi.getField()).isEqualTo("lock");
        assertThat(bidi.getMessage()).contains("U+202E", "a bidirectional control", "position 5");
        assertThat(zeroWidth.getField()).isEqualTo("semaphore");
        assertThat(zeroWidth.getMessage()).contains("U+200D", "position 2");
        assertThat(inMultiLock.getField()).isEqualTo("locks");
        assertThat(inMultiLock.getMessage()).contains("U+FEFF", "position 0");
        assertThat(describe(stub, "jobs/\u202Enightly").hasHolder()).as("refused before anything was proposed, and"
                + " a read of such a name is still answered").isFalse();
    }

    @Test
    void acquire_withInvalidUtf8LockName_isInvalidArgument() throws IOException {
        byte[] request = acquireBytes(holder.id(), new byte[] {'o', (byte) 0xff, (byte) 0xfe, 'k'});

        StatusRuntimeException error = catchThrowableOfType(StatusRuntimeException.class, () -> rawAcquire(request));

        assertThat(error.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
        ErrorDetail detail = TestServers.detail(error);
        assertThat(detail.getReason()).isEqualTo(Reason.REASON_INVALID_ARGUMENT);
        assertThat(detail.getMessage()).contains("Acquire");
    }

    @Test
    void calls_withGarbageOrOversizedBytes_areRefusedAndChangeNothing() {
        Random random = new Random(42);
        for (int i = 0; i < 20; i++) {
            byte[] garbage = new byte[1 + random.nextInt(200)];
            random.nextBytes(garbage);
            StatusRuntimeException error = catchThrowableOfType(StatusRuntimeException.class,
                    () -> rawAcquire(garbage));
            if (error != null) { // some random bytes happen to decode; those fail validation instead
                assertThat(error.getStatus().getCode()).isIn(Status.Code.INVALID_ARGUMENT,
                        Status.Code.FAILED_PRECONDITION);
            }
        }
        byte[] oversized = new byte[FencerServer.INBOUND_MESSAGE_BYTES_MAX + 1];
        StatusRuntimeException tooBig = catchThrowableOfType(StatusRuntimeException.class,
                () -> rawAcquire(oversized));
        assertThat(tooBig.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
    }

    @Test
    void openSession_withTtlOutOfRange_isInvalidArgumentNamingTheTtl() {
        ErrorDetail low = failure(() -> stub.openSession(OpenSessionRequest.newBuilder().setTtlMillis(999).build()));
        ErrorDetail high = failure(() -> stub.openSession(
                OpenSessionRequest.newBuilder().setTtlMillis(3_600_001).build()));
        ErrorDetail huge = failure(() -> stub.openSession(OpenSessionRequest.newBuilder().setTtlMillis(-1).build()));

        assertInvalid(low, "ttl_millis", "999");
        assertInvalid(high, "ttl_millis", "3600001");
        assertInvalid(huge, "ttl_millis", "18446744073709551615");
    }

    @Test
    void acquire_withBadSessionRequestIdOrWait_isRefusedNamingTheValue() {
        ErrorDetail unknown = failure(() -> acquire(stub, new TestSession(987_654, "a-secret"), "lock", 0));
        ErrorDetail zero = failure(() -> acquire(stub, new TestSession(0, holder.secret()), "lock", 0));
        ErrorDetail noRequestId = failure(() -> acquire(stub, holder, "lock", "", 0));
        String longId = "r".repeat(129);
        ErrorDetail longRequestId = failure(() -> acquire(stub, holder, "lock", longId, 0));
        ErrorDetail longWait = failure(() -> acquire(stub, holder, "lock", 3_600_001));

        assertThat(unknown.getReason()).isEqualTo(Reason.REASON_SESSION_EXPIRED);
        assertThat(unknown.getSessionId()).isEqualTo(987_654);
        assertInvalid(zero, "session_id", "0");
        assertInvalid(noRequestId, "request_id", "");
        assertInvalid(longRequestId, "request_id", longId);
        assertInvalid(longWait, "wait_millis", "3600001");
    }

    @Test
    void releaseAndValidate_withMalformedTokens_areInvalidArgument() {
        FencingToken token = held.getToken();
        ErrorDetail garbled = failure(() -> release(stub, holder, token.toBuilder().setSequencer("fencer1.%%%.1")
                .build()));
        ErrorDetail disagreeing = failure(() -> release(stub, holder, token.toBuilder()
                .setSequencer(new io.fencer.core.FencingToken("precious", 999).sequencer()).build()));
        ErrorDetail zeroValue = failure(() -> stub.validate(ValidateRequest.newBuilder()
                .setToken(FencingToken.newBuilder().setLock("precious").setValue(0)).build()));
        ErrorDetail noLock = failure(() -> stub.validate(ValidateRequest.newBuilder()
                .setToken(FencingToken.newBuilder().setValue(3)).build()));

        assertInvalid(garbled, "sequencer", "fencer1.%%%.1");
        assertThat(disagreeing.getField()).isEqualTo("token.sequencer");
        assertInvalid(zeroValue, "token.value", "0");
        assertInvalid(noLock, "token.lock", "");
    }

    @Test
    void release_withTokenThatIsNotTheHolders_isNotHolderNamingBothTokens() {
        FencingToken stale = held.getToken().toBuilder().setValue(held.getToken().getValue() + 1_000)
                .clearSequencer().build();
        StatusRuntimeException error = catchThrowableOfType(StatusRuntimeException.class,
                () -> release(stub, holder, stale));

        assertThat(error.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
        ErrorDetail detail = TestServers.detail(error);
        assertThat(detail.getReason()).isEqualTo(Reason.REASON_NOT_HOLDER);
        assertThat(detail.getLock()).isEqualTo("precious");
        assertThat(detail.getPresentedToken()).isEqualTo(stale.getValue());
        assertThat(detail.getCurrentToken()).isEqualTo(held.getToken().getValue());
        assertThat(detail.getSessionId()).isEqualTo(holder.id());
    }

    @Test
    void list_withLimitOverMaximum_isInvalidArgument() {
        ErrorDetail detail = failure(() -> stub.list(ListRequest.newBuilder().setLimit(1_001).build()));

        assertInvalid(detail, "limit", "1001");
    }

    @Test
    void openSession_beyondSessionsMax_isResourceExhaustedNamingTheLimit() {
        openSession(stub, TTL_MILLIS);
        openSession(stub, TTL_MILLIS);
        StatusRuntimeException error = catchThrowableOfType(StatusRuntimeException.class,
                () -> openSession(stub, TTL_MILLIS));

        assertThat(error.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
        ErrorDetail detail = TestServers.detail(error);
        assertThat(detail.getReason()).isEqualTo(Reason.REASON_LIMIT_EXCEEDED);
        assertThat(detail.getLimit()).isEqualTo("sessionsMax");
        assertThat(detail.getLimitValue()).isEqualTo(3);
    }

    @Test
    void acquire_beyondWaitersPerLockMax_isResourceExhaustedNamingTheLimit() {
        TestSession first = openSession(stub, TTL_MILLIS);
        TestSession second = openSession(stub, TTL_MILLIS);
        ListenableFuture<AcquireResponse> waiting = LocksGrpc.newFutureStub(channel)
                .withDeadlineAfter(30, TimeUnit.SECONDS)
                .acquire(TestServers.acquireRequest(first, "precious", "w1", 20_000));
        await().atMost(Duration.ofSeconds(30)).until(() -> describe(stub, "precious").getWaitersCount() == 1);

        ErrorDetail detail = failure(() -> acquire(stub, second, "precious", 20_000));

        assertThat(detail.getReason()).isEqualTo(Reason.REASON_LIMIT_EXCEEDED);
        assertThat(detail.getLimit()).isEqualTo("waitersPerLockMax");
        assertThat(detail.getLimitValue()).isEqualTo(1);
        waiting.cancel(true);
        await().atMost(Duration.ofSeconds(30)).until(() -> describe(stub, "precious").getWaitersCount() == 0);
    }

    private static void assertInvalid(ErrorDetail detail, String field, String value) {
        assertThat(detail.getReason()).isEqualTo(Reason.REASON_INVALID_ARGUMENT);
        assertThat(detail.getField()).isEqualTo(field);
        assertThat(detail.getValue()).isEqualTo(value);
        assertThat(detail.getMessage()).isNotEmpty();
    }

    /** Encodes an AcquireRequest by hand, so the lock can hold bytes that are not UTF-8. */
    private static byte[] acquireBytes(long sessionId, byte[] lock) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        CodedOutputStream out = CodedOutputStream.newInstance(bytes);
        out.writeUInt64(1, sessionId);
        out.writeByteArray(2, lock);
        out.writeString(3, "raw-request");
        out.flush();
        return bytes.toByteArray();
    }

    private AcquireResponse rawAcquire(byte[] request) {
        MethodDescriptor<byte[], AcquireResponse> method = LocksGrpc.getAcquireMethod().toBuilder(
                new RawBytes(), ProtoUtils.marshaller(AcquireResponse.getDefaultInstance())).build();
        return ClientCalls.blockingUnaryCall(channel, method,
                CallOptions.DEFAULT.withDeadlineAfter(20, TimeUnit.SECONDS), request);
    }

    /** Sends bytes as they are. */
    private static final class RawBytes implements MethodDescriptor.Marshaller<byte[]> {
        @Override
        public InputStream stream(byte[] value) {
            return new ByteArrayInputStream(value);
        }

        @Override
        public byte[] parse(InputStream stream) {
            throw new UnsupportedOperationException("requests only");
        }
    }
}
