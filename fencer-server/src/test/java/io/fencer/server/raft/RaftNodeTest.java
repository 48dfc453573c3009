package io.fencer.server.raft;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.fencer.core.Ticker;
import io.fencer.lock.BackupFile;
import io.fencer.lock.Command;
import io.fencer.lock.Limits;
import io.fencer.lock.LockStateMachine;
import io.fencer.server.FencerServer;
import io.fencer.server.ServerConfig;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The takeover bound B and the leader lease it rests on, as derived in {@link RaftNode#takeoverBound()}; and how a
 * peer submits what its proposer sends.
 */
class RaftNodeTest {
    private static final Duration WAIT = Duration.ofSeconds(30);

    @TempDir
    Path directory;

    @Test
    void leaderLeaseTimeout_isTheRatioOfTheShortestElectionTimeout() {
        assertThat(RaftNode.leaderLeaseTimeout()).isEqualTo(Duration.ofMillis(360));
        assertThat(RaftNode.leaderLeaseTimeout()).isLessThan(RaftNode.ELECTION_TIMEOUT_MIN);
    }

    @Test
    void takeoverBound_coversTheLeaseAndTheLongestTimeADeposedLeaderLeadsUnheard() {
        Duration bound = RaftNode.takeoverBound();

        assertThat(bound).isGreaterThanOrEqualTo(RaftNode.leaderLeaseTimeout());
        assertThat(bound).isGreaterThanOrEqualTo(RaftNode.ELECTION_TIMEOUT_MAX);
        assertThat(bound).isEqualTo(Duration.ofMillis(800));
    }

    /**
     * "Any free" Raft port (0, a lone peer): the port held from its choice (see {@link PortReservation}) is the one the
     * transport listens on, the one the group's configuration records, and it takes connections.
     */
    @Test
    void start_raftPortZero_listensOnTheHeldPortWhichTheGroupRecords() throws Exception {
        ServerConfig config = ServerConfig.defaults(directory).withPorts(0, 0, 0);
        try (RaftNode raft = RaftNode.start(config, null, new RaftLockStateMachine(Limits.DEFAULT), () -> 0)) {
            int listening = raft.server().getServerRpc().getInetSocketAddress().getPort();

            assertThat(listening).isPositive();
            assertThat(raft.server().getGroups()).singleElement()
                    .satisfies(group -> assertThat(group.getPeers()).singleElement()
                            .satisfies(peer -> assertThat(peer.getAddress()).isEqualTo("127.0.0.1:" + listening)));
            try (Socket socket = new Socket()) {
                socket.connect(new InetSocketAddress("127.0.0.1", listening), 5_000);
            }
            assertThat(raft.configurationSize()).as("counted without a copy").isOne()
                    .isEqualTo(raft.configurationPeers().size());
        }
    }

    /**
     * Ratis's server would hand every request to its client executor (threads named {@code <peer>-client-thread*})
     * and block the caller until it appended: two thread wake-ups per command. Submitting to the division starts no
     * such thread. The peer's id is this test's own, so no other server's threads can share the name.
     */
    @Test
    void submit_commandsAndReads_appendOnTheCallingThreadWithoutRatissClientExecutor() throws Exception {
        String id = "submit-" + UUID.randomUUID();
        RaftLockStateMachine stateMachine = new RaftLockStateMachine(Limits.DEFAULT);
        ServerConfig config = ServerConfig.defaults(directory).withPorts(0, 0, 0).withPeers(id, List.of());
        try (RaftNode raft = RaftNode.start(config, null, stateMachine, () -> 0);
                Proposer proposer = new Proposer(raft, stateMachine, Ticker.system(), (task, delay) -> () -> { })) {
            await().atMost(WAIT).until(raft::isLeaderReady);

            for (long session = 1; session <= 20; session++) {
                proposer.propose(new Command.ExpireSession(session, false)).get(WAIT.toSeconds(), TimeUnit.SECONDS);
                assertThat(proposer.read(machine -> 1).get(WAIT.toSeconds(), TimeUnit.SECONDS)).isEqualTo(1);
            }

            assertThat(Thread.getAllStackTraces().keySet()).extracting(Thread::getName)
                    .as("threads of Ratis's client executor for peer %s", id)
                    .noneMatch(name -> name.startsWith(id + "-client"));
        }
    }

    /**
     * A restored peer whose seed file went missing (its data directory copied without it, or the file deleted once
     * the peer had a snapshot) is refused, naming the seed, before Ratis touches its storage. Before, Ratis formatted
     * Fencer's own group's storage beside the restored group's and failed with "ILLEGAL TRANSITION ... RUNNING ->
     * STARTING"; the stray storage then kept the peer from starting even once its seed was back.
     */
    @Test
    void start_restoredPeerWhoseSeedIsGone_refusedNamingTheSeedAndStartsOnceItIsBack() throws Exception {
        BackupFile.Contents backup = new BackupFile.Contents(BackupFile.Kind.BACKUP, 0, UUID.randomUUID(), 0,
                BackupFile.stateOf(new LockStateMachine(Limits.DEFAULT)));
        BackupFile.Contents seed = RestoreSeed.write(directory, backup, 1, Limits.DEFAULT, 0);
        Path seedFile = directory.resolve(RestoreSeed.FILE_NAME);
        byte[] seedBytes = Files.readAllBytes(seedFile);
        ServerConfig config = ServerConfig.defaults(directory).withPorts(0, 0, 0);
        try (RaftNode raft = RaftNode.start(config, null, new RaftLockStateMachine(Limits.DEFAULT), () -> 0)) {
            await().atMost(WAIT).until(raft::isLeaderReady);
        }
        Files.delete(seedFile);

        assertThatThrownBy(() -> RaftNode.start(config, null, new RaftLockStateMachine(Limits.DEFAULT), () -> 0)
                .close()).isInstanceOf(java.io.IOException.class)
                .hasMessageContaining(RestoreSeed.groupName(seed)).hasMessageContaining(seedFile.toString());

        Files.write(seedFile, seedBytes);
        RaftLockStateMachine stateMachine = new RaftLockStateMachine(Limits.DEFAULT);
        try (RaftNode raft = RaftNode.start(config, null, stateMachine, () -> 0)) {
            assertThat(raft.groupId().getUuid().toString()).isEqualTo(RestoreSeed.groupName(seed));
            assertThat(stateMachine.readLocal(LockStateMachine::generation)).isEqualTo(1);
        }
    }

    /**
     * A restore that did not finish (killed, or out of disk, while it wrote the seed) leaves its partial seed and no
     * seed. Before, a server started there passed over it and founded a new group counting tokens from 1 again, and
     * the restore run again refused the directory as not empty. Now the server refuses and writes nothing, and the
     * restore run again replaces the partial seed.
     */
    @Test
    void start_dataDirectoryOfAnUnfinishedRestore_refusedUntilTheRestoreRunsAgain() throws Exception {
        BackupFile.Contents backup = new BackupFile.Contents(BackupFile.Kind.BACKUP, 0, UUID.randomUUID(), 0,
                BackupFile.stateOf(new LockStateMachine(Limits.DEFAULT)));
        Path partial = directory.resolve(RestoreSeed.FILE_NAME + ".tmp");
        Files.writeString(partial, "the first half of a seed");
        ServerConfig config = ServerConfig.defaults(directory).withPorts(0, 0, 0);

        assertThatThrownBy(() -> FencerServer.start(config).close()).isInstanceOf(IOException.class)
                .hasMessageContaining(partial.getFileName().toString()).hasMessageContaining("did not finish");
        try (Stream<Path> entries = Files.list(directory)) {
            assertThat(entries).as("nothing written beside the partial seed").containsExactly(partial);
        }

        BackupFile.Contents seed = RestoreSeed.write(directory, backup, 1, Limits.DEFAULT, 0);
        assertThat(partial).doesNotExist();
        RaftLockStateMachine stateMachine = new RaftLockStateMachine(Limits.DEFAULT);
        try (RaftNode raft = RaftNode.start(config, null, stateMachine, () -> 0)) {
            assertThat(raft.groupId().getUuid().toString()).isEqualTo(RestoreSeed.groupName(seed));
            assertThat(stateMachine.readLocal(LockStateMachine::generation)).isEqualTo(1);
        }
    }
}
