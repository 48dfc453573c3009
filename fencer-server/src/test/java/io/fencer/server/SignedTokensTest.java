package io.fencer.server;

import static io.fencer.server.TestServers.acquire;
import static io.fencer.server.TestServers.failure;
import static io.fencer.server.TestServers.openSession;
import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.api.v1.DescribeRequest;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.FencingToken;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.Reason;
import io.fencer.api.v1.ReleaseResponse;
import io.fencer.api.v1.StoreGrpc;
import io.fencer.api.v1.ValidateRequest;
import io.fencer.api.v1.ValidateResponse;
import io.fencer.core.ManualTicker;
import io.fencer.core.Sequencer;
import io.fencer.core.TokenKeys;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A server with token keys: the lock service signs every sequencer it returns and the store requires them. */
class SignedTokensTest {
    private static final long TTL_MILLIS = 60_000;

    @TempDir
    Path dataDir;
    private final TokenKeys keys = TokenKeys.generate("k1");
    private FencerServer server;
    private ManagedChannel channel;
    private LocksGrpc.LocksBlockingStub locks;
    private StoreGrpc.StoreBlockingStub store;

    @BeforeEach
    void start() throws Exception {
        server = FencerServer.start(TestServers.singlePeer(dataDir, new ManualTicker())
                .withTokenKeys(keys));
        channel = TestServers.channel(server);
        locks = TestServers.stub(channel);
        store = StoreServiceTest.StoreTesting.stub(channel);
        TestServers.awaitServing(server, channel);
    }

    @AfterEach
    void stop() throws Exception {
        TestServers.close(channel);
        server.close();
    }

    @Test
    void acquire_withKeys_returnsSignedSequencerThatTheStoreAccepts() {
        TestServers.TestSession session = openSession(locks, TTL_MILLIS);
        FencingToken token = acquire(locks, session, "orders", 0).getToken();

        var written = store.write(StoreServiceTest.StoreTesting.put("orders", token.getSequencer(), "k", "v"));

        assertThat(token.getSequencer().split("\\.")).hasSize(5);
        assertThat(Sequencer.parse(token.getSequencer(), keys))
                .isEqualTo(new io.fencer.core.FencingToken("orders", token.getValue()));
        assertThat(written.getToken()).isEqualTo(token.getValue());
    }

    /** Regression: Describe and a refused Acquire once returned the holder's signed sequencer to any caller. */
    @Test
    void describeAndBusyAcquire_withKeys_returnHolderUnsigned_soOnlyTheGranteeCanWrite() {
        TestServers.TestSession holderSession = openSession(locks, TTL_MILLIS);
        TestServers.TestSession otherSession = openSession(locks, TTL_MILLIS);
        FencingToken granted = acquire(locks, holderSession, "orders", 0).getToken();

        FencingToken described = TestServers.describe(locks, "orders").getHolder();
        FencingToken busy = acquire(locks, otherSession, "orders", 0).getHolder();

        assertThat(described.getValue()).isEqualTo(granted.getValue());
        assertThat(busy.getValue()).isEqualTo(granted.getValue());
        for (String leaked : new String[] {described.getSequencer(), busy.getSequencer()}) {
            assertThat(leaked.split("\\.")).hasSize(3);
            ErrorDetail detail = failure(
                    () -> store.write(StoreServiceTest.StoreTesting.put("orders", leaked, "k", "x")));
            assertThat(detail.getReason()).isEqualTo(Reason.REASON_BAD_TOKEN_SIGNATURE);
        }
    }

    @Test
    void write_withUnsignedOrForgedSequencer_isUnauthenticatedAndChangesNothing() {
        TestServers.TestSession session = openSession(locks, TTL_MILLIS);
        FencingToken token = acquire(locks, session, "orders", 0).getToken();
        io.fencer.core.FencingToken core = new io.fencer.core.FencingToken("orders", token.getValue() + 1);
        String unsigned = Sequencer.format(core);
        String forged = Sequencer.format(core, TokenKeys.generate("k1"));

        StatusRuntimeException unsignedError = catchStatus(() -> store.write(
                StoreServiceTest.StoreTesting.put("orders", unsigned, "k", "x")));
        ErrorDetail forgedDetail = failure(() -> store.write(
                StoreServiceTest.StoreTesting.put("orders", forged, "k", "x")));

        assertThat(unsignedError.getStatus().getCode()).isEqualTo(Status.Code.UNAUTHENTICATED);
        ErrorDetail unsignedDetail = TestServers.detail(unsignedError);
        assertThat(unsignedDetail.getReason()).isEqualTo(Reason.REASON_BAD_TOKEN_SIGNATURE);
        assertThat(unsignedDetail.getLock()).isEqualTo("orders");
        assertThat(unsignedDetail.getPresentedToken()).isEqualTo(core.value());
        assertThat(forgedDetail.getReason()).isEqualTo(Reason.REASON_BAD_TOKEN_SIGNATURE);
        assertThat(forgedDetail.getMessage()).contains("does not verify");
        assertThat(store.fence(io.fencer.api.v1.FenceRequest.newBuilder().setScope("orders").build()).getExists())
                .isFalse();
    }

    @Test
    void releaseAndValidate_acceptSignedAndUnsignedSequencers() {
        TestServers.TestSession session = openSession(locks, TTL_MILLIS);
        FencingToken signed = acquire(locks, session, "jobs", 0).getToken();
        FencingToken unsignedOnly = FencingToken.newBuilder()
                .setSequencer(Sequencer.format(new io.fencer.core.FencingToken("jobs", signed.getValue()))).build();
        FencingToken signedOnly = FencingToken.newBuilder().setSequencer(signed.getSequencer()).build();

        ValidateResponse byUnsigned = locks.validate(ValidateRequest.newBuilder().setToken(unsignedOnly).build());
        ValidateResponse bySigned = locks.validate(ValidateRequest.newBuilder().setToken(signedOnly).build());
        ReleaseResponse released = TestServers.release(locks, session, signed);

        assertThat(byUnsigned.getStatus()).isEqualTo(ValidateResponse.Status.CURRENT);
        assertThat(bySigned.getStatus()).isEqualTo(ValidateResponse.Status.CURRENT);
        assertThat(released.getReleased().getValue()).isEqualTo(signed.getValue());
        // Only the grantee's Acquire answer carries the signed sequencer: the release answer names the token unsigned.
        assertThat(released.getReleased().getSequencer())
                .isEqualTo(Sequencer.format(new io.fencer.core.FencingToken("jobs", signed.getValue())));
        assertThat(locks.describe(DescribeRequest.newBuilder().setLock("jobs").build()).hasHolder()).isFalse();
    }

    private static StatusRuntimeException catchStatus(Runnable call) {
        return org.assertj.core.api.Assertions.catchThrowableOfType(StatusRuntimeException.class, call::run);
    }
}
