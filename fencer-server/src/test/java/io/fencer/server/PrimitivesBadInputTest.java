package io.fencer.server;

import static io.fencer.server.TestServers.failure;
import static io.fencer.server.TestServers.openSession;
import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.api.v1.AcquireAllRequest;
import io.fencer.api.v1.AcquirePermitRequest;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.Reason;
import io.fencer.core.ManualTicker;
import io.fencer.server.TestServers.TestSession;
import io.grpc.ManagedChannel;
import java.nio.file.Path;
import java.util.Collections;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Bad input to semaphores and multi-locks over real gRPC: each a typed error naming the value. */
class PrimitivesBadInputTest {
    private static final long TTL_MILLIS = 60_000;

    @TempDir
    Path dataDir;
    private FencerServer server;
    private ManagedChannel channel;
    private LocksGrpc.LocksBlockingStub locks;
    private TestSession session;

    @BeforeEach
    void start() throws Exception {
        server = FencerServer.start(TestServers.singlePeer(dataDir, new ManualTicker()));
        channel = TestServers.channel(server);
        locks = TestServers.stub(channel);
        TestServers.awaitServing(server, channel);
        session = openSession(locks, TTL_MILLIS);
    }

    @AfterEach
    void stop() throws Exception {
        TestServers.close(channel);
        server.close();
    }

    private AcquirePermitRequest.Builder permit(int permits) {
        return AcquirePermitRequest.newBuilder().setSessionId(session.id()).setSessionSecret(session.secret())
                .setSemaphore("jobs").setPermits(permits).setRequestId("r-" + permits);
    }

    @Test
    void acquirePermit_zeroOrHugePermits_isInvalidArgumentNamingTheCount() {
        ErrorDetail zero = failure(() -> locks.acquirePermit(permit(0).build()));
        ErrorDetail huge = failure(() -> locks.acquirePermit(permit(-1).build())); // uint32 4294967295

        assertThat(zero.getReason()).isEqualTo(Reason.REASON_INVALID_ARGUMENT);
        assertThat(zero.getField()).isEqualTo("permits");
        assertThat(zero.getValue()).isEqualTo("0");
        assertThat(huge.getValue()).isEqualTo("4294967295");
    }

    @Test
    void acquirePermit_anotherCountWhileInUse_isInvalidArgumentNamingBoth() {
        assertThat(locks.acquirePermit(permit(2).build()).getToken().getSemaphore()).isEqualTo("jobs");

        TestSession another = openSession(locks, TTL_MILLIS);
        ErrorDetail refused = failure(() -> locks.acquirePermit(AcquirePermitRequest.newBuilder()
                .setSessionId(another.id()).setSessionSecret(another.secret()).setSemaphore("jobs").setPermits(3)
                .setRequestId("r").build()));
        assertThat(refused.getReason()).isEqualTo(Reason.REASON_INVALID_ARGUMENT);
        assertThat(refused.getValue()).isEqualTo("3");
        assertThat(refused.getField()).isEqualTo("permits");
    }

    @Test
    void acquireAll_aLockNamedTwiceOrTooMany_isInvalidArgumentNamingIt() {
        AcquireAllRequest.Builder request = AcquireAllRequest.newBuilder().setSessionId(session.id())
                .setSessionSecret(session.secret()).setRequestId("all");

        ErrorDetail twice = failure(() -> locks.acquireAll(request.clone().addLocks("a").addLocks("b").addLocks("a")
                .build()));
        ErrorDetail many = failure(() -> locks.acquireAll(request.clone()
                .addAllLocks(Collections.nCopies(65, "x")).build()));

        assertThat(twice.getReason()).isEqualTo(Reason.REASON_INVALID_ARGUMENT);
        assertThat(twice.getValue()).isEqualTo("a");
        assertThat(many.getValue()).isEqualTo("65");
    }
}
