package io.fencer.server;

import static io.fencer.server.TestServers.failure;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.ByteString;
import io.fencer.api.v1.AbortUnitRequest;
import io.fencer.api.v1.BeginUnitRequest;
import io.fencer.api.v1.CommitUnitRequest;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.GetRequest;
import io.fencer.api.v1.Reason;
import io.fencer.api.v1.StoreGrpc;
import io.fencer.api.v1.UnitWriteRequest;
import io.fencer.api.v1.WriteResponse;
import io.fencer.core.FencingToken;
import io.fencer.core.ManualTicker;
import io.fencer.core.Sequencer;
import io.fencer.server.StoreServiceTest.StoreTesting;
import io.fencer.server.rpc.TestIdentities;
import io.fencer.store.StoreOptions;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The server-wide bound on the bytes the store's open units buffer ({@code unitBytesBufferedMax}): each unit is within
 * its own 4 MiB, yet all of them together must not hold more than the bound, whoever began them. A store server with
 * a bound of 1 MiB, where two ops of 400 KiB fit and a third does not.
 */
class StoreUnitBytesTest {
    private static final long BOUND_BYTES = 1L << 20;
    private static final int VALUE_BYTES = 400 * 1024;
    private static final Duration WAIT_MAX = Duration.ofSeconds(30);

    private final ManualTicker ticker = new ManualTicker();
    @TempDir
    Path dataDir;
    private FencerStoreServer server;
    private ManagedChannel channel;

    @BeforeEach
    void start() throws Exception {
        Path aclFile = dataDir.resolve("store.acl");
        Files.writeString(aclFile, "alice write jobs/\nbob write jobs/\ncarol write jobs/\n");
        server = FencerStoreServer.start(StoreServerConfig.defaults(dataDir.resolve("data")).withPorts(0, 0)
                .withAcl(aclFile).withStore(StoreOptions.defaults().withTicker(ticker)
                        .withUnitBytesBufferedMax(BOUND_BYTES)), TestIdentities.fromHeader());
        channel = TestServers.channel(server.port());
    }

    @AfterEach
    void stop() throws Exception {
        TestServers.close(channel);
        server.close();
    }

    @Test
    void unitWrite_pastTheBound_isRefusedNamingItAndTheUnitCommitsWhatItHad() {
        String unit = begin("alice", "jobs/a", 30_000);
        write("alice", unit, "k1");
        write("alice", unit, "k2");

        StatusRuntimeException refused = refusedWrite("alice", unit, "k3");
        WriteResponse committed = store("alice").commitUnit(CommitUnitRequest.newBuilder().setUnitId(unit).build());

        assertThat(refused.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
        assertRefusedForTheBound(TestServers.detail(refused));
        assertThat(committed.getOpsApplied()).as("the refused op was not buffered, the others were kept").isEqualTo(2);
        assertThat(found("jobs/a", "k1")).isTrue();
        assertThat(found("jobs/a", "k2")).isTrue();
        assertThat(found("jobs/a", "k3")).isFalse();
    }

    @Test
    void unitWrite_afterAnotherUnitCommitted_getsItsBytesBack() {
        String full = fillTheBound();
        String other = begin("bob", "jobs/b", 30_000);
        assertRefusedForTheBound(failure(() -> write("bob", other, "k")));

        store("alice").commitUnit(CommitUnitRequest.newBuilder().setUnitId(full).build());

        assertThat(write("bob", other, "k")).isEqualTo(1);
    }

    @Test
    void unitWrite_afterAnotherUnitAborted_getsItsBytesBack() {
        String full = fillTheBound();
        String other = begin("bob", "jobs/b", 30_000);
        assertRefusedForTheBound(failure(() -> write("bob", other, "k")));

        assertThat(store("alice").abortUnit(AbortUnitRequest.newBuilder().setUnitId(full).build()).getAborted())
                .isTrue();

        assertThat(write("bob", other, "k")).isEqualTo(1);
    }

    @Test
    void unitWrite_afterAnotherUnitExpired_getsItsBytesBack() {
        String expiring = begin("alice", "jobs/a", 1_000);
        write("alice", expiring, "k1");
        write("alice", expiring, "k2");
        String other = begin("bob", "jobs/b", 30_000);
        assertRefusedForTheBound(failure(() -> write("bob", other, "k")));

        ticker.advance(Duration.ofSeconds(2)); // past the first unit's deadline: the store's next sweep expires it

        await().atMost(WAIT_MAX).ignoreExceptionsInstanceOf(StatusRuntimeException.class)
                .untilAsserted(() -> assertThat(write("bob", other, "k")).isEqualTo(1));
        ErrorDetail expired = failure(() -> store("alice").commitUnit(CommitUnitRequest.newBuilder()
                .setUnitId(expiring).build()));
        assertThat(expired.getLimit()).isEqualTo("unitTimeout");
    }

    /**
     * A unit past its deadline can never commit: its bytes are free for another unit's write at once, not only after
     * the store's next sweep (up to a second later), which this test does not wait for.
     */
    @Test
    void unitWrite_rightAfterAnotherUnitsDeadline_getsItsBytesBackWithoutTheSweep() {
        String expiring = begin("alice", "jobs/a", 1_000);
        write("alice", expiring, "k1");
        write("alice", expiring, "k2");
        String other = begin("bob", "jobs/b", 30_000);
        assertRefusedForTheBound(failure(() -> write("bob", other, "k")));

        ticker.advance(Duration.ofSeconds(2)); // past the first unit's deadline; no call of its own sees it

        assertThat(write("bob", other, "k")).isEqualTo(1);
        ErrorDetail expired = failure(() -> store("alice").commitUnit(CommitUnitRequest.newBuilder()
                .setUnitId(expiring).build()));
        assertThat(expired.getLimit()).isEqualTo("unitTimeout");
    }

    @Test
    void metrics_unitsBuffering_showTheirBytesUntilTheyEnd() throws Exception {
        assertThat(metrics()).contains("fencer_store_units_buffered_bytes 0.0");
        String unit = fillTheBound();
        long held = 2 * (2 + VALUE_BYTES + 80L); // two ops of a 2-byte key, a value and the overhead of each

        assertThat(metrics()).contains("fencer_store_units_buffered_bytes " + held + ".0");
        store("alice").commitUnit(CommitUnitRequest.newBuilder().setUnitId(unit).build());
        assertThat(metrics()).contains("fencer_store_units_buffered_bytes 0.0");
    }

    @Test
    void unitWrite_manyIdentitiesTogether_cannotPassTheBound() {
        String alices = begin("alice", "jobs/a", 30_000);
        String bobs = begin("bob", "jobs/b", 30_000);
        String carols = begin("carol", "jobs/c", 30_000);
        write("alice", alices, "k");
        write("bob", bobs, "k");

        ErrorDetail refused = failure(() -> write("carol", carols, "k"));

        assertRefusedForTheBound(refused);
        assertThat(refused.getIdentity()).as("a bound of the whole server, no identity's quota").isEmpty();
    }

    /** Begins a unit of alice's and buffers two ops of 400 KiB in it: a third op of any unit would pass the bound. */
    private String fillTheBound() {
        String unit = begin("alice", "jobs/a", 30_000);
        write("alice", unit, "k1");
        write("alice", unit, "k2");
        return unit;
    }

    private static void assertRefusedForTheBound(ErrorDetail refused) {
        assertThat(refused.getReason()).isEqualTo(Reason.REASON_LIMIT_EXCEEDED);
        assertThat(refused.getLimit()).isEqualTo("unitBytesBufferedMax");
        assertThat(refused.getLimitValue()).isEqualTo(BOUND_BYTES);
        assertThat(refused.getMessage()).contains("unitBytesBufferedMax of " + BOUND_BYTES,
                "--unit-bytes-buffered-max");
    }

    private String begin(String identity, String scope, long timeoutMillis) {
        return store(identity).beginUnit(BeginUnitRequest.newBuilder().setScope(scope)
                .setSequencer(Sequencer.format(new FencingToken(scope, 3))).setTimeoutMillis(timeoutMillis).build())
                .getUnitId();
    }

    /** Buffers one op of {@link #VALUE_BYTES} under {@code key}; returns the ops the unit buffers. */
    private int write(String identity, String unit, String key) {
        return store(identity).unitWrite(UnitWriteRequest.newBuilder().setUnitId(unit)
                .addOps(StoreTesting.putOp(key, new byte[VALUE_BYTES])).build()).getOpsBuffered();
    }

    private StatusRuntimeException refusedWrite(String identity, String unit, String key) {
        try {
            write(identity, unit, key);
        } catch (StatusRuntimeException e) {
            return e;
        }
        throw new AssertionError("the write of " + key + " to unit " + unit + " should have been refused");
    }

    private boolean found(String scope, String key) {
        return store("alice").get(GetRequest.newBuilder().setScope(scope).setKey(ByteString.copyFromUtf8(key))
                .build()).getFound();
    }

    /** Returns the admin port's /metrics. */
    private String metrics() throws Exception {
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.adminPort() + "/metrics"))
                .timeout(WAIT_MAX).build();
        return HttpClient.newHttpClient().send(request, HttpResponse.BodyHandlers.ofString()).body();
    }

    private StoreGrpc.StoreBlockingStub store(String identity) {
        return StoreTesting.stub(channel).withInterceptors(TestIdentities.as(identity));
    }
}
