package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import com.google.protobuf.InvalidProtocolBufferException;
import io.fencer.api.v1.AcquireRequest;
import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.CreateScopeRequest;
import io.fencer.api.v1.DescribeRequest;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.FencingToken;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.OpenSessionRequest;
import io.fencer.api.v1.OpenSessionResponse;
import io.fencer.api.v1.Reason;
import io.fencer.api.v1.StoreGrpc;
import io.fencer.api.v1.WriteRequest;
import io.fencer.api.v1.WriteResponse;
import io.fencer.testing.FreePorts;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.protobuf.StatusProto;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The attacks found against a {@code fencer server} process with its defaults (plaintext: every caller is
 * {@code anonymous}), made again from outside the process, each with a control showing the attack was really made:
 * a session flood and a lock flood from one address stop at that address's quota while a client from another
 * address (127.0.0.2) is still served; a replay of a victim's OpenSession request id gets no secret, so the victim's
 * lock cannot be released; and a scope squatted before its owner is refused, so the owner's first write succeeds.
 */
class AbuseProcessTest {
    private static final long TTL_MILLIS = 60_000;
    private static final int SESSIONS_QUOTA = 20;
    private static final int LOCKS_QUOTA = 30;

    @TempDir
    Path dir;
    private FencerProcess server;
    private final List<ManagedChannel> channels = new ArrayList<>();
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
    private int httpPort;
    private int clientPort;

    @AfterEach
    void stop() throws Exception {
        for (ManagedChannel channel : channels) {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
        if (server != null) {
            server.close();
        }
    }

    @Test
    void sessionFlood_fromOneAddress_stopsAtItsQuotaWhileAnotherAddressIsServed() throws Exception {
        LocksGrpc.LocksBlockingStub attacker = locks(startServer("--sessions-per-identity-max",
                Integer.toString(SESSIONS_QUOTA)), "127.0.0.1");
        int opened = 0;
        ErrorDetail refused = null;
        for (int i = 0; i < SESSIONS_QUOTA + 5 && refused == null; i++) {
            try {
                attacker.openSession(OpenSessionRequest.newBuilder().setTtlMillis(3_600_000).build());
                opened++;
            } catch (StatusRuntimeException e) {
                assertThat(e.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
                refused = detail(e);
            }
        }
        LocksGrpc.LocksBlockingStub victim = locks(server, "127.0.0.2");
        OpenSessionResponse victims = victim.openSession(OpenSessionRequest.newBuilder().setTtlMillis(TTL_MILLIS)
                .build());
        AcquireResponse acquired = victim.acquire(acquire(victims, "victim/lock"));

        assertThat(opened).as("the attacker's flood took its whole quota").isEqualTo(SESSIONS_QUOTA);
        assertThat(refused).as("and was then refused").isNotNull();
        assertThat(refused.getReason()).isEqualTo(Reason.REASON_LIMIT_EXCEEDED);
        assertThat(refused.getIdentity()).isEqualTo("anonymous@127.0.0.1");
        assertThat(refused.getLimit()).isEqualTo("sessionsPerIdentityMax");
        assertThat(refused.getLimitValue()).isEqualTo(SESSIONS_QUOTA);
        assertThat(acquired.getAcquired()).as("a client from another address is served").isTrue();
    }

    @Test
    void lockFlood_fromOneAddress_stopsAtItsQuotaWhileAnotherAddressIsServed() throws Exception {
        LocksGrpc.LocksBlockingStub attacker = locks(startServer("--locks-per-identity-max",
                Integer.toString(LOCKS_QUOTA)), "127.0.0.1");
        OpenSessionResponse session = attacker.openSession(OpenSessionRequest.newBuilder().setTtlMillis(TTL_MILLIS)
                .build());
        int taken = 0;
        ErrorDetail refused = null;
        for (int i = 0; i < LOCKS_QUOTA + 5 && refused == null; i++) {
            try {
                taken += attacker.acquire(acquire(session, "flood/" + i)).getAcquired() ? 1 : 0;
            } catch (StatusRuntimeException e) {
                refused = detail(e);
            }
        }
        LocksGrpc.LocksBlockingStub victim = locks(server, "127.0.0.2");
        OpenSessionResponse victims = victim.openSession(OpenSessionRequest.newBuilder().setTtlMillis(TTL_MILLIS)
                .build());
        AcquireResponse acquired = victim.acquire(acquire(victims, "victim/lock"));

        assertThat(taken).as("the attacker's flood took its whole quota").isEqualTo(LOCKS_QUOTA);
        assertThat(refused).as("and was then refused").isNotNull();
        assertThat(refused.getReason()).isEqualTo(Reason.REASON_LIMIT_EXCEEDED);
        assertThat(refused.getIdentity()).isEqualTo("anonymous@127.0.0.1");
        assertThat(refused.getLimit()).isEqualTo("locksPerIdentityMax");
        assertThat(refused.getLimitValue()).isEqualTo(LOCKS_QUOTA);
        assertThat(acquired.getAcquired()).as("a client from another address is served").isTrue();
    }

    /**
     * The victim opens as the Java client does (a random request id and retry key) and takes a lock; the attacker,
     * anonymous as every plaintext caller is, learnt the request id and replays it. It must get no secret, and so
     * cannot release the victim's lock over HTTP.
     */
    @Test
    void openSessionReplay_ofAVictimsRequestId_getsNoSecretAndCannotReleaseTheVictimsLock() throws Exception {
        LocksGrpc.LocksBlockingStub locks = locks(startServer(), "127.0.0.1");
        OpenSessionRequest victimsOpen = OpenSessionRequest.newBuilder().setTtlMillis(TTL_MILLIS)
                .setRequestId(UUID.randomUUID().toString()).setRetryKey(randomKey()).build();
        OpenSessionResponse victims = locks.openSession(victimsOpen);
        FencingToken held = locks.acquire(acquire(victims, "victim/lock")).getToken();

        String stolenSecret = "";
        ErrorDetail replayRefused = null;
        for (OpenSessionRequest replay : List.of(victimsOpen.toBuilder().clearRetryKey().build(),
                victimsOpen.toBuilder().setRetryKey(randomKey()).build())) {
            try {
                stolenSecret = locks.openSession(replay).getSecret();
            } catch (StatusRuntimeException e) {
                replayRefused = detail(e);
            }
        }
        HttpResponse<String> release = post("Locks/Release", "{\"sessionId\": " + victims.getSessionId()
                + ", \"sessionSecret\": \"" + stolenSecret + "\", \"token\": {\"lock\": \"victim/lock\", \"value\": "
                + held.getValue() + "}}");
        OpenSessionResponse victimsRetry = locks.openSession(victimsOpen);

        assertThat(stolenSecret).as("the replays got no secret").isEmpty();
        assertThat(replayRefused).isNotNull();
        assertThat(replayRefused.getReason()).isEqualTo(Reason.REASON_SESSION_UNAUTHENTICATED);
        assertThat(release.statusCode()).as("the attacker's release over HTTP: %s", release.body()).isEqualTo(401);
        assertThat(locks.describe(DescribeRequest.newBuilder().setLock("victim/lock").build()).getHolder()
                .getValue()).as("the victim keeps its lock").isEqualTo(held.getValue());
        assertThat(victimsRetry.getSecret()).as("control: the request id was the remembered one")
                .isEqualTo(victims.getSecret());
    }

    @Test
    void scopeSquat_beforeItsOwner_isRefusedAndTheOwnersFirstWriteSucceeds() throws Exception {
        ManagedChannel channel = channel(startServer(), "127.0.0.1");
        LocksGrpc.LocksBlockingStub locks = LocksGrpc.newBlockingStub(channel);
        StoreGrpc.StoreBlockingStub store = StoreGrpc.newBlockingStub(channel);
        OpenSessionResponse attackers = locks.openSession(OpenSessionRequest.newBuilder().setTtlMillis(TTL_MILLIS)
                .build());
        FencingToken attackersGrant = locks.acquire(acquire(attackers, "attacker/lock")).getToken();

        List<ErrorDetail> squats = new ArrayList<>();
        for (CreateScopeRequest squat : List.of(
                CreateScopeRequest.newBuilder().setScope("orders").setLock("attacker/lock")
                        .setSequencer(attackersGrant.getSequencer()).build(),
                CreateScopeRequest.newBuilder().setScope("orders").setLock("attacker/lock").build())) {
            try {
                store.createScope(squat);
            } catch (StatusRuntimeException e) {
                squats.add(detail(e));
            }
        }
        OpenSessionResponse owners = locks.openSession(OpenSessionRequest.newBuilder().setTtlMillis(TTL_MILLIS)
                .build());
        FencingToken ownersGrant = locks.acquire(acquire(owners, "orders")).getToken();
        WriteResponse ownersWrite = store.write(WriteRequest.newBuilder().setScope("orders")
                .setSequencer(ownersGrant.getSequencer()).addOps(io.fencer.api.v1.Op.newBuilder()
                        .setPut(io.fencer.api.v1.Put.newBuilder().setKey(ByteString.copyFromUtf8("k"))
                                .setValue(ByteString.copyFromUtf8("v")))).build());

        assertThat(squats).as("both squats refused").hasSize(2);
        assertThat(squats.get(0).getReason()).isEqualTo(Reason.REASON_PERMISSION_DENIED);
        assertThat(squats.get(0).getWhy()).contains("scope 'orders'", "lock 'attacker/lock'");
        assertThat(ownersWrite.getAccepted()).as("the owner's first write").isEqualTo(ownersGrant.getValue());
    }

    private FencerProcess startServer(String... options) throws Exception {
        FencerProcess.Ports ports = FencerProcess.Ports.free();
        httpPort = FreePorts.choose(1)[0];
        List<String> arguments = new ArrayList<>(List.of("--http-port", Integer.toString(httpPort)));
        arguments.addAll(List.of(options));
        server = FencerProcess.server("server", dir.resolve("data"), ports, arguments.toArray(String[]::new));
        server.awaitHealthy(ports.admin());
        clientPort = ports.client();
        return server;
    }

    private LocksGrpc.LocksBlockingStub locks(FencerProcess process, String sourceAddress) {
        return LocksGrpc.newBlockingStub(channel(process, sourceAddress));
    }

    /** A plaintext channel to the server whose connections leave from {@code sourceAddress} (a loopback address). */
    private ManagedChannel channel(FencerProcess process, String sourceAddress) {
        ManagedChannel channel = NettyChannelBuilder.forAddress("127.0.0.1", clientPort).usePlaintext()
                .localSocketPicker(new NettyChannelBuilder.LocalSocketPicker() {
                    @Override
                    public java.net.SocketAddress createSocketAddress(java.net.SocketAddress remote,
                            io.grpc.Attributes attributes) {
                        return new InetSocketAddress(sourceAddress, 0);
                    }
                }).build();
        channels.add(channel);
        return channel;
    }

    private static AcquireRequest acquire(OpenSessionResponse session, String lock) {
        return AcquireRequest.newBuilder().setSessionId(session.getSessionId()).setSessionSecret(session.getSecret())
                .setLock(lock).setRequestId(UUID.randomUUID().toString()).build();
    }

    private static ByteString randomKey() {
        byte[] key = new byte[32];
        new SecureRandom().nextBytes(key);
        return ByteString.copyFrom(key);
    }

    private HttpResponse<String> post(String method, String json) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + httpPort + "/fencer.v1." + method))
                .timeout(Duration.ofSeconds(30)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(json)).build(), HttpResponse.BodyHandlers.ofString());
    }

    private static ErrorDetail detail(StatusRuntimeException error) {
        try {
            return StatusProto.fromThrowable(error).getDetails(0).unpack(ErrorDetail.class).toBuilder()
                    .setMessage(error.getStatus().getDescription()).build();
        } catch (InvalidProtocolBufferException e) {
            throw new AssertionError(e);
        }
    }
}
