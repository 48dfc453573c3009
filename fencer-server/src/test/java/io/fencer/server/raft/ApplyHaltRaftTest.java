package io.fencer.server.raft;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.fencer.core.Ticker;
import io.fencer.core.UnavailableException;
import io.fencer.lock.Command;
import io.fencer.lock.Limits;
import io.fencer.lock.LockStateMachine;
import io.fencer.lock.Result;
import io.fencer.lock.SecretHash;
import io.fencer.server.ServerConfig;
import io.fencer.server.admin.AdminHttpServer;
import io.fencer.server.net.PortLimits;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A halt on a real one-peer Ratis group: the proposer refuses everything naming the halt, no snapshot is written,
 * a restart halts at the same entry without closing the division, and a release without the bug applies the entry
 * from the data directory left as it was. And {@code /healthz} of a division that Ratis closed.
 */
class ApplyHaltRaftTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final SecretHash HASH = SecretHash.of("the tests' session secret");

    @TempDir
    Path directory;

    @Test
    void propose_afterAnApplyFailed_isRefusedNamingTheHalt_noSnapshotIsTaken_andARestartHaltsAgain()
            throws Exception {
        long haltedAt;
        long before;
        try (RaftNode raft = start(failing()); Proposer proposer = proposer(raft)) {
            await().atMost(WAIT).until(raft::isLeaderReady);
            propose(proposer, new Command.OpenSession("open-1", 60_000, "tester", HASH));
            before = ((Result.Granted) propose(proposer, new Command.Acquire(1, HASH, "fine", "request-1", false)))
                    .token().value();

            CompletableFuture<Result> boom = proposer.propose(new Command.Acquire(1, HASH, "boom", "request-2", false));

            assertThat(boom).failsWithin(WAIT).withThrowableOfType(ExecutionException.class).havingCause()
                    .isInstanceOf(UnavailableException.class).withMessageContaining("halted applying the Raft log");
            haltedAt = raft.halt().index();
            assertThat(raft.appliedIndex()).as("the last entry applied").isEqualTo(haltedAt - 1);
            assertRefused(proposer.propose(new Command.Acquire(1, HASH, "other", "request-3", false)), haltedAt);
            assertRefused(proposer.read(LockStateMachine::sessionCount), haltedAt);
            assertThat(raft.takeSnapshot(WAIT)).as("the snapshot index when halted").isNegative();
            assertThat(snapshotFiles()).as("snapshot files").isEmpty();
            assertThat(raft.divisionState()).isEqualTo(RaftNode.RUNNING);
        }

        try (RaftNode raft = start(failing())) {
            await().atMost(WAIT).until(() -> raft.halt() != null);
            assertThat(raft.halt().index()).as("the entry the restart halts at").isEqualTo(haltedAt);
            Thread.sleep(2_000); // a crash loop would close the division now
            assertThat(raft.divisionState()).isEqualTo(RaftNode.RUNNING);
            assertThat(raft.halt().index()).isEqualTo(haltedAt);
        }

        // The release that fixes the bug, on the same data directory: the entry applies, the counters go on.
        RaftLockStateMachine fixed = new RaftLockStateMachine(Limits.DEFAULT);
        try (RaftNode raft = start(fixed); Proposer proposer = proposer(raft)) {
            await().atMost(WAIT).until(raft::isLeaderReady);
            assertThat(raft.halt()).isNull();
            boolean boomHeld = fixed.readLocal(machine -> machine.describe("boom").isPresent());
            assertThat(boomHeld).as("the halted entry, applied").isTrue();
            assertThat(propose(proposer, new Command.Release(1, HASH, "fine", before)))
                    .isInstanceOf(Result.Released.class);
            Result next = propose(proposer, new Command.Acquire(1, HASH, "fine", "request-4", false));
            assertThat(((Result.Granted) next).token().value()).as("the next token of the lock").isGreaterThan(before);
        }
    }

    /** Ratis closes a division it cannot run; until now /healthz answered from the last leader it knew. */
    @Test
    void healthz_divisionClosed_answers503WithTheDivisionsState() throws Exception {
        HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
        try (RaftNode raft = start(new RaftLockStateMachine(Limits.DEFAULT));
                AdminHttpServer admin = AdminHttpServer.start("127.0.0.1", 0, null, "n1", raft, () -> "",
                        PortLimits.DEFAULT, new SimpleMeterRegistry(), Ticker.system())) {
            await().atMost(WAIT).until(raft::isLeaderReady);
            URI healthz = URI.create("http://127.0.0.1:" + admin.port() + "/healthz");
            HttpResponse<String> serving = http.send(HttpRequest.newBuilder(healthz).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(serving.statusCode()).as("the control: a running division").isEqualTo(200);

            raft.server().getDivision(RaftNode.GROUP_ID).close();

            HttpResponse<String> closed = http.send(HttpRequest.newBuilder(healthz).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(closed.statusCode()).isEqualTo(503);
            assertThat(closed.body()).contains("\"status\":\"not-running\"", "\"division\":\"CLOSED\"");
        }
    }

    private RaftNode start(RaftLockStateMachine stateMachine) throws Exception {
        return RaftNode.start(ServerConfig.defaults(directory).withPorts(0, 0, 0), null, stateMachine, () -> 0);
    }

    private static RaftLockStateMachine failing() {
        return FailingApplies.onAcquireOf("boom", Limits.DEFAULT, Ticker.system(),
                () -> new IllegalStateException("a bug in the state machine"));
    }

    private static Proposer proposer(RaftNode raft) throws Exception {
        return new Proposer(raft, (RaftLockStateMachine) raft.server().getDivision(RaftNode.GROUP_ID)
                .getStateMachine(), Ticker.system(), (task, delayNanos) -> () -> { });
    }

    private static Result propose(Proposer proposer, Command command) throws Exception {
        return proposer.propose(command).get(WAIT.toSeconds(), TimeUnit.SECONDS);
    }

    private static void assertRefused(CompletableFuture<?> call, long haltedAt) {
        assertThat(call).failsWithin(WAIT).withThrowableOfType(ExecutionException.class).havingCause()
                .isInstanceOf(UnavailableException.class)
                .withMessageContaining("halted applying the Raft log at index " + haltedAt)
                .withMessageContaining("IllegalStateException: a bug in the state machine")
                .withMessageContaining("To recover");
    }

    private List<Path> snapshotFiles() throws Exception {
        try (Stream<Path> files = Files.walk(directory)) {
            return files.filter(file -> file.getFileName().toString().startsWith("snapshot.")).toList();
        }
    }
}
