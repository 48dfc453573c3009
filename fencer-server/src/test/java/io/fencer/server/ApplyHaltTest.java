package io.fencer.server;

import static io.fencer.server.TestServers.acquire;
import static io.fencer.server.TestServers.openSession;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.awaitility.Awaitility.await;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.OpenSessionRequest;
import io.fencer.core.ManualTicker;
import io.fencer.lock.Limits;
import io.fencer.server.raft.FailingApplies;
import io.fencer.server.raft.RaftLockStateMachine;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.ByteArrayOutputStream;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A peer whose state machine fails on an entry (a bug, injected: the apply of an Acquire of "boom" throws) halts at
 * that entry: every call answers UNAVAILABLE naming the index, the reason and the recovery; a call waiting for the
 * log ends at once; {@code /healthz} answers 503 naming the index; and a restart on the same data directory halts at
 * the same entry again, with one ERROR and the division running, not a crash loop.
 */
class ApplyHaltTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final String FAILURE = "a bug in the state machine";

    @TempDir
    Path dataDir;
    private final List<AutoCloseable> toClose = new ArrayList<>();
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    @AfterEach
    void closeAll() throws Exception {
        for (int i = toClose.size() - 1; i >= 0; i--) {
            toClose.get(i).close();
        }
    }

    @Test
    void calls_afterAnApplyFails_answerUnavailableNamingTheHalt_andARestartHaltsAgainWithOneError() throws Exception {
        FencerServer server = start();
        ManagedChannel channel = channel(server);
        LocksGrpc.LocksBlockingStub stub = TestServers.stub(channel);
        TestServers.TestSession holder = openSession(stub, 60_000);
        TestServers.TestSession waiter = openSession(stub, 60_000);
        AcquireResponse fine = acquire(stub, holder, "fine", 0);
        assertThat(fine.getAcquired()).as("the control: an apply that works").isTrue();
        LinkedBlockingQueue<Object> waiting = new LinkedBlockingQueue<>();
        LocksGrpc.newStub(channel).withDeadlineAfter(60, TimeUnit.SECONDS).acquire(
                TestServers.acquireRequest(waiter, "fine", "waiting", 50_000), TestServers.collecting(waiting));
        await().atMost(WAIT).until(() -> TestServers.waiterSessions(stub, "fine").contains(waiter.id()));

        StatusRuntimeException boom = catchThrowableOfType(StatusRuntimeException.class,
                () -> acquire(stub, holder, "boom", 0));

        long haltedAt = assertNamesTheHalt(boom);
        assertThat(waiting.poll(WAIT.toSeconds(), TimeUnit.SECONDS)).as("the waiting Acquire, ended by the halt")
                .isInstanceOfSatisfying(StatusRuntimeException.class, error -> assertThat(assertNamesTheHalt(error))
                        .isEqualTo(haltedAt));
        assertEveryCallRefused(stub, channel, holder, haltedAt);
        assertHealthHalted(server, haltedAt);
        assertThat(get(server, "/metrics").body()).contains("fencer_raft_halted 1.0");
        server.close();

        String log = capturingStandardError(() -> {
            FencerServer restarted = start();
            ManagedChannel again = channel(restarted);
            await().atMost(WAIT).ignoreExceptions().until(() -> get(restarted, "/healthz").statusCode() == 503
                    && get(restarted, "/healthz").body().contains("\"status\":\"halted\""));
            assertHealthHalted(restarted, haltedAt);
            Thread.sleep(2_000); // a crash loop would close the division and log again now
            assertHealthHalted(restarted, haltedAt);
            assertEveryCallRefused(TestServers.stub(again), again, holder, haltedAt);
        });
        assertThat(log.split("halted applying the Raft log at log entry " + haltedAt, -1))
                .as("ERROR lines of the halt after the restart, in:%n%s", log).hasSize(2);
    }

    private FencerServer start() throws Exception {
        ServerConfig config = TestServers.singlePeer(dataDir, new ManualTicker());
        RaftLockStateMachine failing = FailingApplies.onAcquireOf("boom", Limits.DEFAULT, config.ticker(),
                () -> new IllegalStateException(FAILURE));
        FencerServer server = FencerServer.start(config, null, failing);
        toClose.add(server);
        return server;
    }

    private ManagedChannel channel(FencerServer server) {
        ManagedChannel channel = TestServers.channel(server);
        toClose.add(() -> TestServers.close(channel));
        await().atMost(WAIT).until(server::isLeader);
        return channel;
    }

    /** Checks that a call was refused UNAVAILABLE naming a halt, its reason and the recovery; returns its index. */
    private static long assertNamesTheHalt(StatusRuntimeException error) {
        assertThat(error).isNotNull();
        assertThat(error.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
        String message = error.getStatus().getDescription();
        assertThat(message).contains("halted applying the Raft log at index ", "IllegalStateException: " + FAILURE,
                "To recover");
        String index = message.substring(message.indexOf("at index ") + "at index ".length());
        return Long.parseLong(index.substring(0, index.indexOf(' ')));
    }

    private static void assertEveryCallRefused(LocksGrpc.LocksBlockingStub stub, ManagedChannel channel,
            TestServers.TestSession session, long haltedAt) {
        List<Runnable> calls = List.of(
                () -> stub.openSession(OpenSessionRequest.newBuilder().setTtlMillis(60_000).build()),
                () -> acquire(stub, session, "other", 0),
                () -> TestServers.describe(stub, "fine"),
                () -> TestServers.closeSession(stub, session),
                () -> {
                    try {
                        TestServers.keepAliveOnce(channel, session);
                    } catch (InterruptedException e) {
                        throw new AssertionError(e);
                    }
                });
        for (Runnable call : calls) {
            assertThat(assertNamesTheHalt(catchThrowableOfType(StatusRuntimeException.class, call::run)))
                    .isEqualTo(haltedAt);
        }
    }

    private void assertHealthHalted(FencerServer server, long haltedAt) throws Exception {
        HttpResponse<String> health = get(server, "/healthz");
        assertThat(health.statusCode()).isEqualTo(503);
        JsonObject body = JsonParser.parseString(health.body()).getAsJsonObject();
        assertThat(body.get("status").getAsString()).isEqualTo("halted");
        assertThat(body.get("index").getAsLong()).isEqualTo(haltedAt);
        assertThat(body.get("reason").getAsString()).isEqualTo("IllegalStateException: " + FAILURE);
        assertThat(body.get("division").getAsString()).as("the division runs: no crash").isEqualTo("RUNNING");
        assertThat(body.get("appliedIndex").getAsLong()).isEqualTo(haltedAt - 1);
    }

    private HttpResponse<String> get(FencerServer server, String path) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.adminPort() + path))
                .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString());
    }

    @FunctionalInterface
    private interface Steps {
        void run() throws Exception;
    }

    /** Runs {@code steps} while the log (standard error) is copied, and returns the copy. */
    private static String capturingStandardError(Steps steps) throws Exception {
        PrintStream original = System.err;
        ByteArrayOutputStream copy = new ByteArrayOutputStream();
        OutputStream tee = new OutputStream() {
            @Override
            public void write(int b) {
                original.write(b);
                synchronized (copy) {
                    copy.write(b);
                }
            }

            @Override
            public void write(byte[] bytes, int offset, int length) {
                original.write(bytes, offset, length);
                synchronized (copy) {
                    copy.write(bytes, offset, length);
                }
            }
        };
        System.setErr(new PrintStream(tee, true, StandardCharsets.UTF_8));
        try {
            steps.run();
        } finally {
            System.setErr(original);
        }
        synchronized (copy) {
            return copy.toString(StandardCharsets.UTF_8);
        }
    }
}
