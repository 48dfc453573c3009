package io.fencer.server;

import static io.fencer.server.TestServers.acquire;
import static io.fencer.server.TestServers.acquireRequest;
import static io.fencer.server.TestServers.describe;
import static io.fencer.server.TestServers.failure;
import static io.fencer.server.TestServers.keepAliveOnce;
import static io.fencer.server.TestServers.openSession;
import static io.fencer.server.TestServers.release;
import static io.fencer.server.TestServers.waiterSessions;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.common.util.concurrent.ListenableFuture;
import com.google.protobuf.ByteString;
import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.FencingToken;
import io.fencer.api.v1.KeepAliveResponse;
import io.fencer.api.v1.ListRequest;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.OpenSessionRequest;
import io.fencer.api.v1.OpenSessionResponse;
import io.fencer.api.v1.Reason;
import io.fencer.core.ManualTicker;
import io.fencer.server.TestServers.TestSession;
import io.fencer.server.rpc.Identities;
import io.fencer.testing.FreePorts;
import io.grpc.ManagedChannel;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A session's secret leaves the server once, in its OpenSession answer: it is in no other reply, no log line, no
 * Raft log entry and no snapshot, which keep only its hash. And a retried OpenSession gets the same secret only from
 * the leader's bounded memory of recent opens; a retry it cannot answer never gets a secret for the old session.
 */
class SessionSecrecyTest {
    private static final long TTL_MILLIS = 60_000;
    private static final long LONG_TTL_MILLIS = 3_600_000;
    private static final Duration WAIT_MAX = Duration.ofSeconds(30);

    @TempDir
    Path dataDir;
    private final ManualTicker ticker = new ManualTicker();
    private FencerServer server;
    private ManagedChannel channel;
    private LocksGrpc.LocksBlockingStub stub;

    private void start(ServerConfig config) throws Exception {
        server = FencerServer.start(config);
        channel = TestServers.channel(server);
        stub = TestServers.stub(channel);
        TestServers.awaitServing(server, channel);
    }

    private void stopServer() throws Exception {
        if (channel != null) {
            TestServers.close(channel);
            channel = null;
        }
        if (server != null) {
            server.close();
            server = null;
        }
    }

    @AfterEach
    void stop() throws Exception {
        stopServer();
    }

    @Test
    void secret_isInNoReplyLogLineRaftLogOrSnapshot_whichKeepOnlyItsHash() throws Exception {
        int raftPort = FreePorts.one();
        List<TestSession> sessions = new ArrayList<>();
        List<byte[]> replies = new ArrayList<>();
        String logs;
        try (CapturedStandardError logged = CapturedStandardError.start()) {
            start(TestServers.singlePeer(dataDir, ticker).withPorts(0, 0, raftPort));
            sessions.addAll(exercise(replies));
            assertThat(server.takeSnapshot()).as("the snapshot's index").isPositive();
            stopServer(); // every log line of the run is written
            logs = logged.text();
        }

        assertThat(logs).as("the capture saw the server's log").contains("snapshot").contains("written");
        List<Path> files = filesUnder(dataDir);
        Path snapshot = files.stream().filter(file -> file.getFileName().toString().startsWith("snapshot."))
                .filter(file -> !file.getFileName().toString().endsWith(".md5")).findFirst().orElseThrow();
        for (TestSession session : sessions) {
            byte[] text = session.secret().getBytes(StandardCharsets.UTF_8);
            byte[] random = Base64.getUrlDecoder().decode(session.secret());
            assertThat(logs).as("log lines").doesNotContain(session.secret());
            for (byte[] reply : replies) {
                assertThat(indexOf(reply, text)).as("a reply holds secret %s", session).isEqualTo(-1);
            }
            for (Path file : files) {
                byte[] bytes = Files.readAllBytes(file);
                assertThat(indexOf(bytes, text)).as("%s holds the secret of %s", file, session).isEqualTo(-1);
                assertThat(indexOf(bytes, random)).as("%s holds the secret's bytes of %s", file, session)
                        .isEqualTo(-1);
            }
        }
        TestSession kept = sessions.get(sessions.size() - 1);
        assertThat(indexOf(Files.readAllBytes(snapshot), sha256(kept.secret()))).as("the snapshot keeps the hash")
                .isNotNegative();

        start(TestServers.singlePeer(dataDir, ticker).withPorts(0, 0, raftPort));
        KeepAliveResponse afterRestart = keepAliveOnce(channel, kept);
        assertThat(afterRestart.getExpired()).isFalse();
        assertThat(afterRestart.hasError()).as("the hash restored from disk still checks the secret").isFalse();
    }

    /**
     * Runs every kind of call with real secrets and wrong ones, keeps every reply's bytes in {@code replies} and
     * returns the sessions opened, the last one still open and holding a lock.
     */
    private List<TestSession> exercise(List<byte[]> replies) throws Exception {
        TestSession holder = openSession(stub, TTL_MILLIS);
        TestSession waiter = openSession(stub, TTL_MILLIS);
        AcquireResponse held = acquire(stub, holder, "orders", 0);
        ListenableFuture<AcquireResponse> waiting = LocksGrpc.newFutureStub(channel)
                .withDeadlineAfter(60, TimeUnit.SECONDS).acquire(acquireRequest(waiter, "orders", "w", 30_000));
        await().atMost(WAIT_MAX).until(() -> waiterSessions(stub, "orders").contains(waiter.id()));
        replies.add(held.toByteArray());
        replies.add(acquire(stub, waiter, "orders", 0).toByteArray());
        replies.add(describe(stub, "orders").toByteArray());
        replies.add(stub.list(ListRequest.getDefaultInstance()).toByteArray());
        replies.add(keepAliveOnce(channel, holder).toByteArray());
        replies.add(keepAliveOnce(channel, holder.withSecret(waiter.secret())).toByteArray());
        SessionHijackTest.assertUnauthenticated(() -> acquire(stub, holder.withSecret(waiter.secret()), "x", 0),
                holder.id());
        SessionHijackTest.assertUnauthenticated(() -> release(stub, waiter.withSecret(holder.secret()),
                held.getToken()), waiter.id());
        replies.add(release(stub, holder, held.getToken()).toByteArray());
        replies.add(waiting.get(30, TimeUnit.SECONDS).toByteArray());
        replies.add(TestServers.closeSession(stub, waiter).toByteArray());
        TestSession kept = openSession(stub, TTL_MILLIS);
        replies.add(acquire(stub, kept, "kept", 0).toByteArray());
        assertThat(describe(stub, "kept").getHolderIdentity()).isEqualTo(Identities.ANONYMOUS);
        return List.of(holder, waiter, kept);
    }

    @Test
    void openSession_retriedWithinTheWindow_returnsTheSameSessionAndSecret() throws Exception {
        start(TestServers.singlePeer(dataDir, ticker));
        OpenSessionRequest request = OpenSessionRequest.newBuilder().setTtlMillis(TTL_MILLIS)
                .setRequestId(UUID.randomUUID().toString()).setRetryKey(retryKey()).build();

        OpenSessionResponse first = stub.openSession(request);
        ticker.advance(Duration.ofSeconds(50));
        OpenSessionResponse retry = stub.openSession(request);

        assertThat(retry.getSessionId()).isEqualTo(first.getSessionId());
        assertThat(retry.getSecret()).isEqualTo(first.getSecret()).hasSize(43);
        TestSession session = new TestSession(first.getSessionId(), retry.getSecret());
        assertThat(acquire(stub, session, "retried", 0).getAcquired()).isTrue();
    }

    /**
     * Every plaintext caller is anonymous, so a request id alone must not fetch a session's secret: an attacker who
     * learnt the victim's request id and replays it gets no secret (without the victim's retry key, or with another),
     * and cannot release the victim's lock; the victim's own retry, with its key, still gets its secret.
     */
    @Test
    void openSession_anonymousReplayOfAnotherCallersRequestId_getsNoSecretAndTheVictimKeepsItsLock()
            throws Exception {
        start(TestServers.singlePeer(dataDir, ticker));
        OpenSessionRequest victims = OpenSessionRequest.newBuilder().setTtlMillis(TTL_MILLIS)
                .setRequestId(UUID.randomUUID().toString()).setRetryKey(retryKey()).build();
        OpenSessionResponse opened = stub.openSession(victims);
        FencingToken held = acquire(stub, new TestSession(opened.getSessionId(), opened.getSecret()), "victim's",
                0).getToken();

        ErrorDetail withoutKey = failure(() -> stub.openSession(victims.toBuilder().clearRetryKey().build()));
        ErrorDetail withAnotherKey = failure(() -> stub.openSession(victims.toBuilder().setRetryKey(retryKey())
                .build()));
        ErrorDetail releaseByGuess = failure(() -> release(stub, new TestSession(opened.getSessionId(), ""), held));
        OpenSessionResponse ownRetry = stub.openSession(victims);

        for (ErrorDetail replay : List.of(withoutKey, withAnotherKey)) {
            assertThat(replay.getReason()).isEqualTo(Reason.REASON_SESSION_UNAUTHENTICATED);
            assertThat(replay.getMessage()).contains("retry_key", "open a new session")
                    .doesNotContain(opened.getSecret());
        }
        assertThat(releaseByGuess.getReason()).isEqualTo(Reason.REASON_SESSION_UNAUTHENTICATED);
        assertThat(ownRetry.getSecret()).isEqualTo(opened.getSecret());
        assertThat(describe(stub, "victim's").getHolder()).isEqualTo(held);
    }

    @Test
    void openSession_anonymousRetryOfAKeylessOpen_getsNoSecretSayingToOpenANewSession() throws Exception {
        start(TestServers.singlePeer(dataDir, ticker));
        OpenSessionRequest keyless = OpenSessionRequest.newBuilder().setTtlMillis(TTL_MILLIS)
                .setRequestId(UUID.randomUUID().toString()).build();
        OpenSessionResponse opened = stub.openSession(keyless);

        ErrorDetail retried = failure(() -> stub.openSession(keyless));

        assertThat(retried.getReason()).isEqualTo(Reason.REASON_SESSION_UNAUTHENTICATED);
        assertThat(retried.getMessage()).contains("anonymous and carried no retry_key", "open a new session")
                .doesNotContain(opened.getSecret());
    }

    @Test
    void openSession_malformedRetryKey_isInvalidArgument() throws Exception {
        start(TestServers.singlePeer(dataDir, ticker));
        OpenSessionRequest open = OpenSessionRequest.newBuilder().setTtlMillis(TTL_MILLIS)
                .setRequestId(UUID.randomUUID().toString()).build();

        ErrorDetail tooShort = failure(() -> stub.openSession(open.toBuilder()
                .setRetryKey(ByteString.copyFrom(new byte[15])).build()));
        ErrorDetail tooLong = failure(() -> stub.openSession(open.toBuilder()
                .setRetryKey(ByteString.copyFrom(new byte[65])).build()));
        ErrorDetail withoutRequestId = failure(() -> stub.openSession(open.toBuilder().clearRequestId()
                .setRetryKey(retryKey()).build()));

        assertThat(List.of(tooShort, withoutRequestId, tooLong)).extracting(ErrorDetail::getField)
                .containsOnly("retry_key");
        assertThat(tooShort.getMessage()).contains("15 bytes", "16 to 64");
        assertThat(withoutRequestId.getMessage()).contains("without a request_id");
    }

    private static ByteString retryKey() {
        byte[] key = new byte[32];
        new java.security.SecureRandom().nextBytes(key);
        return ByteString.copyFrom(key);
    }

    @Test
    void openSession_retriedAfterTheWindow_isUnauthenticatedAndTheUnusableSessionExpiresOnSchedule()
            throws Exception {
        start(TestServers.singlePeer(dataDir, ticker));
        OpenSessionRequest request = OpenSessionRequest.newBuilder().setTtlMillis(LONG_TTL_MILLIS)
                .setRequestId(UUID.randomUUID().toString()).build();
        long orphan = stub.openSession(request).getSessionId(); // its answer is "lost": nobody uses the secret
        ticker.advance(Duration.ofSeconds(61));

        SessionHijackTest.assertUnauthenticated(() -> stub.openSession(request), orphan);

        KeepAliveResponse stillOpen = keepAliveOnce(channel, orphan);
        assertThat(stillOpen.getExpired()).as("left to its ttl, not closed").isFalse();
        assertThat(stillOpen.hasError()).as("and usable by nobody").isTrue();
        TestSession fresh = openSession(stub, LONG_TTL_MILLIS);
        assertThat(fresh.id()).isGreaterThan(orphan);
        // Past the orphan's ttl, not the fresh session's, which opened 61 s later.
        ticker.advance(Duration.ofMillis(LONG_TTL_MILLIS - 61_000 + 1_000));
        await().atMost(WAIT_MAX).until(() -> keepAliveOnce(channel, orphan).getExpired());
        assertThat(keepAliveOnce(channel, fresh).getExpired()).isFalse();
    }

    @Test
    void openSession_retriedAfterTheLeaderRestarted_isUnauthenticatedNamingTheSessionOpenedBefore() throws Exception {
        start(TestServers.singlePeer(dataDir, ticker));
        OpenSessionRequest request = OpenSessionRequest.newBuilder().setTtlMillis(TTL_MILLIS)
                .setRequestId(UUID.randomUUID().toString()).build();
        long opened = stub.openSession(request).getSessionId();
        stopServer();

        start(TestServers.singlePeer(dataDir, ticker));

        SessionHijackTest.assertUnauthenticated(() -> stub.openSession(request), opened);
        OpenSessionResponse another = stub.openSession(request.toBuilder()
                .setRequestId(UUID.randomUUID().toString()).build());
        assertThat(another.getSessionId()).isNotEqualTo(opened);
        assertThat(another.getSecret()).hasSize(43);
    }

    private static List<Path> filesUnder(Path directory) throws IOException {
        try (Stream<Path> walk = Files.walk(directory)) {
            return walk.filter(Files::isRegularFile).toList();
        }
    }

    private static byte[] sha256(String secret) throws Exception {
        return MessageDigest.getInstance("SHA-256").digest(secret.getBytes(StandardCharsets.UTF_8));
    }

    private static int indexOf(byte[] bytes, byte[] part) {
        outer:
        for (int i = 0; i + part.length <= bytes.length; i++) {
            for (int j = 0; j < part.length; j++) {
                if (bytes[i + j] != part[j]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }
}
