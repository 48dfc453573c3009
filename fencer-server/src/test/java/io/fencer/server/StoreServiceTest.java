package io.fencer.server;

import static io.fencer.server.TestServers.acquire;
import static io.fencer.server.TestServers.failure;
import static io.fencer.server.TestServers.openSession;
import static io.fencer.server.TestServers.release;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.ByteString;
import io.fencer.api.v1.AbortUnitRequest;
import io.fencer.api.v1.BeginUnitRequest;
import io.fencer.api.v1.BeginUnitResponse;
import io.fencer.api.v1.CommitUnitRequest;
import io.fencer.api.v1.CreateScopeRequest;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.FenceRequest;
import io.fencer.api.v1.FencingToken;
import io.fencer.api.v1.GetRequest;
import io.fencer.api.v1.GetResponse;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.Op;
import io.fencer.api.v1.Policy;
import io.fencer.api.v1.Put;
import io.fencer.api.v1.Reason;
import io.fencer.api.v1.ScopeInfo;
import io.fencer.api.v1.StoreGrpc;
import io.fencer.api.v1.UnitWriteRequest;
import io.fencer.api.v1.WriteRequest;
import io.fencer.api.v1.WriteResponse;
import io.fencer.core.ManualTicker;
import io.fencer.core.Sequencer;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The fenced store over real gRPC, hosted by a real server beside the lock service, on real RocksDB. Its refusals of
 * bad input and of requests over its limits are {@link StoreBadInputContract}, run against both kinds of store.
 */
class StoreServiceTest {
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
        startServer();
    }

    private void startServer() throws Exception {
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

    @Test
    void write_withTokenOfSupersededGrant_isStaleAndNewerValueStaysAcrossRestart() throws Exception {
        TestServers.TestSession sessionA = openSession(locks, TTL_MILLIS);
        TestServers.TestSession sessionB = openSession(locks, TTL_MILLIS);
        FencingToken first = acquire(locks, sessionA, "orders", 0).getToken();
        release(locks, sessionA, first);
        FencingToken second = acquire(locks, sessionB, "orders", 0).getToken();
        assertThat(second.getValue()).isGreaterThan(first.getValue());
        assertThat(second.getSequencer().split("\\.")).as("unsigned without keys").hasSize(3);

        WriteResponse accepted = store.write(StoreTesting.put("orders", second.getSequencer(), "k", "B"));
        ErrorDetail stale = failure(() -> store.write(StoreTesting.put("orders", first.getSequencer(), "k", "A")));

        assertThat(accepted.getToken()).isEqualTo(second.getValue());
        assertThat(accepted.getAccepted()).isEqualTo(second.getValue());
        assertStale(stale, "orders", first.getValue(), second.getValue());
        assertValue("orders", "k", "B", second.getValue());

        stop();
        startServer();

        ErrorDetail staleAfterRestart = failure(() -> store.write(
                StoreTesting.put("orders", first.getSequencer(), "k", "A")));
        assertStale(staleAfterRestart, "orders", first.getValue(), second.getValue());
        assertValue("orders", "k", "B", second.getValue());
    }

    @Test
    void write_overFiveMebibytes_isResourceExhaustedAndLocksStillRefuseOver64KiB() {
        String token = Sequencer.format(new io.fencer.core.FencingToken("huge", 1));
        WriteRequest.Builder huge = WriteRequest.newBuilder().setScope("huge").setSequencer(token);
        for (int index = 0; index < 6; index++) {
            huge.addOps(StoreTesting.putOp("k" + index, new byte[1024 * 1024]));
        }

        StatusRuntimeException tooBig = catchThrowableOfType(StatusRuntimeException.class,
                () -> store.write(huge.build()));
        StatusRuntimeException lockTooBig = catchThrowableOfType(StatusRuntimeException.class,
                () -> locks.describe(io.fencer.api.v1.DescribeRequest.newBuilder().setLock("x".repeat(70_000))
                        .build()));

        assertThat(tooBig.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
        assertThat(lockTooBig.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
        assertThat(TestServers.detail(lockTooBig).getLimitValue()).isEqualTo(FencerServer.INBOUND_MESSAGE_BYTES_MAX);
        assertThat(store.fence(FenceRequest.newBuilder().setScope("huge").build()).getExists()).isFalse();
    }

    @Test
    void write_retriedWithSameIdempotencyKeyAndToken_isReplayedAndAppliedOnce() {
        String token = Sequencer.format(new io.fencer.core.FencingToken("idem", 3));
        WriteRequest request = StoreTesting.put("idem", token, "k", "v").toBuilder().setIdempotencyKey("req-1")
                .build();

        WriteResponse first = store.write(request);
        WriteResponse retry = store.write(request);

        assertThat(first.getReplayed()).isFalse();
        assertThat(retry.getReplayed()).isTrue();
        assertThat(retry.getRevision()).isEqualTo(first.getRevision());
        assertThat(store.fence(FenceRequest.newBuilder().setScope("idem").build()).getRevision())
                .isEqualTo(first.getRevision());
    }

    @Test
    void createScope_strict_refusesASecondWriteOfTheSameToken() {
        FencingToken grant = acquire(locks, openSession(locks, TTL_MILLIS), "jobs", 0).getToken();
        String token = grant.getSequencer();
        ScopeInfo created = store.createScope(CreateScopeRequest.newBuilder().setScope("jobs")
                .setPolicy(Policy.POLICY_STRICT).setSequencer(token).build());

        store.write(StoreTesting.put("jobs", token, "k", "once"));
        ErrorDetail again = failure(() -> store.write(StoreTesting.put("jobs", token, "k", "twice")));

        assertThat(created.getLock()).isEqualTo("jobs");
        assertThat(created.getPolicy()).isEqualTo(Policy.POLICY_STRICT);
        assertStale(again, "jobs", grant.getValue(), grant.getValue());
        assertValue("jobs", "k", "once", grant.getValue());
    }

    @Test
    void commitUnit_afterBufferedWrites_appliesAllAndRetryReturnsSameResult() {
        String token = Sequencer.format(new io.fencer.core.FencingToken("unit", 7));
        BeginUnitResponse begun = store.beginUnit(BeginUnitRequest.newBuilder().setScope("unit").setSequencer(token)
                .setTimeoutMillis(30_000).build());
        store.unitWrite(UnitWriteRequest.newBuilder().setUnitId(begun.getUnitId())
                .addOps(StoreTesting.putOp("a", bytes("1").toByteArray())).build());
        int buffered = store.unitWrite(UnitWriteRequest.newBuilder().setUnitId(begun.getUnitId())
                .addOps(StoreTesting.putOp("b", bytes("2").toByteArray())).build()).getOpsBuffered();
        assertThat(store.get(GetRequest.newBuilder().setScope("unit").setKey(bytes("a")).build()).getFound())
                .as("nothing visible before the commit").isFalse();

        WriteResponse committed = store.commitUnit(CommitUnitRequest.newBuilder().setUnitId(begun.getUnitId())
                .build());
        WriteResponse again = store.commitUnit(CommitUnitRequest.newBuilder().setUnitId(begun.getUnitId()).build());

        assertThat(buffered).isEqualTo(2);
        assertThat(committed.getOpsApplied()).isEqualTo(2);
        assertThat(again).isEqualTo(committed);
        assertValue("unit", "a", "1", 7);
        assertValue("unit", "b", "2", 7);
        assertThat(store.abortUnit(AbortUnitRequest.newBuilder().setUnitId(begun.getUnitId()).build())
                .getAborted()).as("aborting a committed unit").isFalse();
    }

    @Test
    void commitUnit_afterHigherTokenWrote_isStaleAndAppliesNothing() {
        String lower = Sequencer.format(new io.fencer.core.FencingToken("pre", 7));
        String higher = Sequencer.format(new io.fencer.core.FencingToken("pre", 8));
        BeginUnitResponse begun = store.beginUnit(BeginUnitRequest.newBuilder().setScope("pre").setSequencer(lower)
                .setTimeoutMillis(30_000).build());
        store.unitWrite(UnitWriteRequest.newBuilder().setUnitId(begun.getUnitId())
                .addOps(StoreTesting.putOp("a", bytes("unit").toByteArray())).build());

        store.write(StoreTesting.put("pre", higher, "b", "newer"));
        ErrorDetail stale = failure(() -> store.commitUnit(CommitUnitRequest.newBuilder()
                .setUnitId(begun.getUnitId()).build()));

        assertStale(stale, "pre", 7, 8);
        assertThat(store.get(GetRequest.newBuilder().setScope("pre").setKey(bytes("a")).build()).getFound())
                .isFalse();
        assertValue("pre", "b", "newer", 8);
    }

    @Test
    void beginUnit_abandoned_isAbortedAfterItsTimeoutAndAppliesNothing() {
        String token = Sequencer.format(new io.fencer.core.FencingToken("gone", 2));
        BeginUnitResponse begun = store.beginUnit(BeginUnitRequest.newBuilder().setScope("gone").setSequencer(token)
                .setTimeoutMillis(200).build());
        store.unitWrite(UnitWriteRequest.newBuilder().setUnitId(begun.getUnitId())
                .addOps(StoreTesting.putOp("a", bytes("x").toByteArray())).build());

        await().atMost(WAIT_MAX).until(() -> server.store().engine().unitsOpen() == 0);
        ErrorDetail expired = failure(() -> store.commitUnit(CommitUnitRequest.newBuilder()
                .setUnitId(begun.getUnitId()).build()));

        assertThat(expired.getReason()).isEqualTo(Reason.REASON_LIMIT_EXCEEDED);
        assertThat(expired.getLimit()).isEqualTo("unitTimeout");
        assertThat(store.get(GetRequest.newBuilder().setScope("gone").setKey(bytes("a")).build()).getFound())
                .isFalse();
        assertThat(store.write(StoreTesting.put("gone", token, "a", "after")).getToken())
                .as("the scope is free again for the same token").isEqualTo(2);
    }

    private void assertValue(String scope, String key, String value, long writtenBy) {
        GetResponse read = store.get(GetRequest.newBuilder().setScope(scope).setKey(bytes(key)).build());
        assertThat(read.getFound()).as("%s/%s found", scope, key).isTrue();
        assertThat(read.getValue().toStringUtf8()).isEqualTo(value);
        assertThat(read.getWrittenBy()).isEqualTo(writtenBy);
    }

    static void assertStale(ErrorDetail detail, String scope, long presented, long current) {
        assertThat(detail.getReason()).isEqualTo(Reason.REASON_STALE_TOKEN);
        assertThat(detail.getLock()).isEqualTo(scope);
        assertThat(detail.getPresentedToken()).isEqualTo(presented);
        assertThat(detail.getCurrentToken()).isEqualTo(current);
    }

    private static ByteString bytes(String text) {
        return ByteString.copyFromUtf8(text);
    }

    /** Request builders and stubs shared by the store tests. */
    static final class StoreTesting {
        private StoreTesting() {}

        static StoreGrpc.StoreBlockingStub stub(ManagedChannel channel) {
            return StoreGrpc.newBlockingStub(channel).withInterceptors(TestServers.CALL_DEADLINE);
        }

        static Op putOp(String key, byte[] value) {
            return Op.newBuilder().setPut(Put.newBuilder().setKey(ByteString.copyFromUtf8(key))
                    .setValue(ByteString.copyFrom(value))).build();
        }

        static WriteRequest put(String scope, String sequencer, String key, String value) {
            return WriteRequest.newBuilder().setScope(scope).setSequencer(sequencer)
                    .addOps(putOp(key, value.getBytes(StandardCharsets.UTF_8))).build();
        }
    }
}
