package io.fencer.server;

import static io.fencer.server.TestServers.failure;
import static io.fencer.server.TestServers.openSession;
import static io.fencer.server.TestServers.release;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.ByteString;
import io.fencer.api.v1.AcquireRequest;
import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.DescribeRequest;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.FencingToken;
import io.fencer.api.v1.GetRequest;
import io.fencer.api.v1.LockInfo;
import io.fencer.api.v1.LockMode;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.Reason;
import io.fencer.api.v1.StoreGrpc;
import io.fencer.api.v1.ValidateRequest;
import io.fencer.api.v1.ValidateResponse;
import io.fencer.core.ManualTicker;
import io.fencer.server.StoreServiceTest.StoreTesting;
import io.fencer.server.TestServers.TestSession;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Read-write locks on one real server over real gRPC, with the fenced store it hosts. */
class ReadWriteLockServiceTest {
    private static final long TTL_MILLIS = 60_000;
    private static final Duration WAIT_MAX = Duration.ofSeconds(30);

    @TempDir
    Path dataDir;
    private FencerServer server;
    private ManagedChannel channel;
    private LocksGrpc.LocksBlockingStub locks;
    private StoreGrpc.StoreBlockingStub store;

    @BeforeEach
    void start() throws Exception {
        server = FencerServer.start(TestServers.singlePeer(dataDir, new ManualTicker()));
        channel = TestServers.channel(server);
        locks = TestServers.stub(channel);
        store = StoreTesting.stub(channel);
        TestServers.awaitServing(server, channel);
    }

    @AfterEach
    void stop() throws Exception {
        TestServers.close(channel);
        server.close();
    }

    private static AcquireRequest request(TestSession session, String lock, long waitMillis, LockMode mode) {
        return AcquireRequest.newBuilder().setSessionId(session.id()).setSessionSecret(session.secret())
                .setLock(lock).setRequestId(UUID.randomUUID().toString()).setWaitMillis(waitMillis)
                .setMode(mode).build();
    }

    private AcquireResponse acquire(TestSession session, long waitMillis, LockMode mode) {
        return locks.acquire(request(session, "db", waitMillis, mode));
    }

    @Test
    void acquireShared_twoReadersOverlap_aWriterWaitsForBoth_andEveryGrantTakesAFreshToken() throws Exception {
        TestSession readerOne = openSession(locks, TTL_MILLIS);
        TestSession readerTwo = openSession(locks, TTL_MILLIS);
        TestSession writer = openSession(locks, TTL_MILLIS);
        FencingToken first = acquire(readerOne, 0, LockMode.LOCK_MODE_SHARED).getToken();
        FencingToken second = acquire(readerTwo, 0, LockMode.LOCK_MODE_SHARED).getToken();

        assertThat(first.getMode()).isEqualTo(LockMode.LOCK_MODE_SHARED);
        assertThat(first.getSequencer()).endsWith("." + first.getValue() + ".shared");
        assertThat(second.getValue()).isGreaterThan(first.getValue());
        assertThat(acquire(writer, 0, LockMode.LOCK_MODE_EXCLUSIVE).getAcquired()).as("try while read").isFalse();
        CompletableFuture<AcquireResponse> waiting = CompletableFuture.supplyAsync(
                () -> acquire(writer, WAIT_MAX.toMillis(), LockMode.LOCK_MODE_EXCLUSIVE));
        await().atMost(WAIT_MAX).until(() -> describe().getWaitersCount() == 1);
        LockInfo info = describe();
        assertThat(info.getSharedHoldersList()).extracting(holder -> holder.getToken().getValue())
                .containsExactly(first.getValue(), second.getValue());
        assertThat(info.hasHolder()).isFalse();

        release(locks, readerOne, first);
        assertThat(waiting).isNotDone();
        release(locks, readerTwo, second);

        FencingToken written = waiting.get().getToken();
        assertThat(written.getMode()).isEqualTo(LockMode.LOCK_MODE_UNSPECIFIED);
        assertThat(written.getValue()).isGreaterThan(second.getValue());
        assertThat(describe().getSharedHoldersCount()).isZero();
    }

    @Test
    void write_underASharedToken_isModeMismatch_readIsAccepted_untilALaterWriterWrote() {
        TestSession reader = openSession(locks, TTL_MILLIS);
        TestSession writer = openSession(locks, TTL_MILLIS);
        FencingToken shared = acquire(reader, 0, LockMode.LOCK_MODE_SHARED).getToken();

        ErrorDetail refused = failure(() -> store.write(StoreTesting.put("db", shared.getSequencer(), "k", "x")));
        assertThat(refused.getReason()).isEqualTo(Reason.REASON_MODE_MISMATCH);
        assertThat(refused.getLock()).isEqualTo("db");
        assertThat(refused.getPresentedToken()).isEqualTo(shared.getValue());
        assertThat(refused.getValue()).isEqualTo("shared");
        StatusRuntimeException status = org.assertj.core.api.Assertions.catchThrowableOfType(
                StatusRuntimeException.class, () -> store.write(StoreTesting.put("db", shared.getSequencer(), "k",
                        "x")));
        assertThat(status.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
        assertThat(get(shared.getSequencer()).getAccepted()).as("nothing advanced").isZero();

        release(locks, reader, shared);
        FencingToken exclusive = acquire(writer, 0, LockMode.LOCK_MODE_EXCLUSIVE).getToken();
        store.write(StoreTesting.put("db", exclusive.getSequencer(), "k", "by the writer"));

        ErrorDetail stale = failure(() -> get(shared.getSequencer()));
        assertThat(stale.getReason()).isEqualTo(Reason.REASON_STALE_TOKEN);
        assertThat(stale.getCurrentToken()).isEqualTo(exclusive.getValue());
    }

    @Test
    void validate_sharedToken_isCurrentWhileHeld() {
        TestSession reader = openSession(locks, TTL_MILLIS);
        FencingToken shared = acquire(reader, 0, LockMode.LOCK_MODE_SHARED).getToken();
        acquire(openSession(locks, TTL_MILLIS), 0, LockMode.LOCK_MODE_SHARED);

        ValidateResponse current = locks.validate(ValidateRequest.newBuilder().setToken(shared).build());
        ValidateResponse bySequencer = locks.validate(ValidateRequest.newBuilder()
                .setToken(FencingToken.newBuilder().setSequencer(shared.getSequencer())).build());

        assertThat(current.getStatus()).isEqualTo(ValidateResponse.Status.CURRENT);
        assertThat(bySequencer.getStatus()).isEqualTo(ValidateResponse.Status.CURRENT);
    }

    @Test
    void acquire_withAnUnknownModeNumber_isInvalidArgumentNamingIt() {
        TestSession session = openSession(locks, TTL_MILLIS);
        AcquireRequest unknown = request(session, "db", 0, LockMode.LOCK_MODE_SHARED).toBuilder()
                .setModeValue(7).build();

        ErrorDetail refused = failure(() -> locks.acquire(unknown));

        assertThat(refused.getReason()).isEqualTo(Reason.REASON_INVALID_ARGUMENT);
        assertThat(refused.getField()).isEqualTo("mode");
        assertThat(refused.getValue()).isEqualTo("7");
    }

    private LockInfo describe() {
        return locks.describe(DescribeRequest.newBuilder().setLock("db").build());
    }

    private io.fencer.api.v1.GetResponse get(String sequencer) {
        return store.get(GetRequest.newBuilder().setScope("db").setKey(ByteString.copyFromUtf8("k"))
                .setSequencer(sequencer).build());
    }
}
