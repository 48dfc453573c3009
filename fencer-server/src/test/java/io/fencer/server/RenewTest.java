package io.fencer.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.fencer.api.errors.WireErrors;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.KeepAliveResponse;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.Reason;
import io.fencer.api.v1.RenewRequest;
import io.fencer.api.v1.RenewResponse;
import io.fencer.core.ManualTicker;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code Locks/Renew} over gRPC: the unary form of one KeepAlive message, answering as the stream answers. */
class RenewTest {
    @TempDir
    static Path dataDir;
    private static FencerServer server;
    private static ManagedChannel channel;
    private static LocksGrpc.LocksBlockingStub stub;

    @BeforeAll
    static void start() throws Exception {
        server = FencerServer.start(TestServers.singlePeer(dataDir, new ManualTicker()));
        channel = TestServers.channel(server);
        TestServers.awaitServing(server, channel);
        stub = TestServers.stub(channel);
    }

    @AfterAll
    static void stop() throws Exception {
        TestServers.close(channel);
        server.close();
    }

    private static RenewRequest renewal(TestServers.TestSession session) {
        return RenewRequest.newBuilder().setSessionId(session.id()).setSessionSecret(session.secret()).build();
    }

    @Test
    void renew_openAndUnknownSessions_answerAsAKeepAliveStreamDoes() throws Exception {
        TestServers.TestSession session = TestServers.openSession(stub, 45_000);
        RenewResponse renewed = stub.renew(renewal(session));
        KeepAliveResponse kept = TestServers.keepAliveOnce(channel, session);
        assertThat(renewed.getTtlMillis()).isEqualTo(kept.getTtlMillis()).isEqualTo(45_000);
        assertThat(renewed.getExpired()).isEqualTo(kept.getExpired()).isFalse();

        TestServers.TestSession unknown = new TestServers.TestSession(987_654, session.secret());
        assertThat(stub.renew(renewal(unknown)).getExpired()).isTrue();
        assertThat(TestServers.keepAliveOnce(channel, unknown).getExpired()).isTrue();
    }

    @Test
    void renew_wrongSecret_failsWithTheErrorTheStreamAnswersInItsMessage() throws Exception {
        TestServers.TestSession forged = TestServers.openSession(stub, 45_000).withSecret("C".repeat(43));
        StatusRuntimeException refused = catchThrowableOfType(StatusRuntimeException.class,
                () -> stub.renew(renewal(forged)));
        KeepAliveResponse kept = TestServers.keepAliveOnce(channel, forged);

        assertThat(refused.getStatus().getCode()).isEqualTo(Status.Code.UNAUTHENTICATED);
        ErrorDetail overRenew = WireErrors.detail(refused).orElseThrow();
        ErrorDetail overStream = WireErrors.detail(WireErrors.toStatusException(kept.getError())).orElseThrow();
        assertThat(overRenew.getReason()).isEqualTo(Reason.REASON_SESSION_UNAUTHENTICATED);
        assertThat(overRenew).isEqualTo(overStream);
        assertThat(refused.getStatus().getDescription()).doesNotContain("C".repeat(43));
    }
}
