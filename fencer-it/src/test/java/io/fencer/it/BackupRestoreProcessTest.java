package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.client.FencedStore;
import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.ServerStatus;
import io.fencer.client.Session;
import io.fencer.client.StaleWriteException;
import io.fencer.core.FencingToken;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The runbook's "restore after losing the group", with real processes and the real commands: {@code fencer backup} of
 * a running group, more grants after it, the group destroyed, {@code fencer restore} of the backup into three new
 * peers. Every token the restored group grants exceeds every token the lost group granted, those after the backup
 * too; a store that accepted the lost group's last tokens accepts the new holder and refuses the old ones.
 */
class BackupRestoreProcessTest {
    private static final String LOCK = "orders";

    @TempDir
    Path dir;
    private final List<FencerProcess> processes = new ArrayList<>();

    @AfterEach
    void stop() {
        processes.forEach(FencerProcess::close);
    }

    @Test
    void restore_afterGrantsTheBackupCannotKnow_grantsAboveEveryEarlierTokenAndTheStoreRefusesOldHolders()
            throws Exception {
        FencerProcess.Ports storePorts = FencerProcess.Ports.free();
        FencerProcess storeServer = track(FencerProcess.storeServer("store", dir.resolve("store"), storePorts));
        storeServer.awaitHealthy(storePorts.admin());
        FencerProcess.Ports lostPorts = FencerProcess.Ports.free();
        FencerProcess lost = track(FencerProcess.server("lost", dir.resolve("lost"), lostPorts));
        lost.awaitHealthy(lostPorts.admin());
        Path backup = dir.resolve("nightly.fbk");
        List<FencingToken> granted = new ArrayList<>();
        try (FencerClient fencer = client(lostPorts.endpoint());
                FencedStore store = Fencer.newStoreBuilder().endpoint(storePorts.endpoint())
                        .callTimeout(Duration.ofSeconds(30)).build()) {
            Session session = fencer.openSession(Duration.ofSeconds(30));
            grantAndWrite(session, store, 3, granted);
            assertThat(cli("backup", "--out", backup.toString(), "--server", lostPorts.endpoint()).exit())
                    .isZero();
            grantAndWrite(session, store, 3, granted); // after the backup: it cannot know these
        }
        lost.kill9();
        Trees.delete(dir.resolve("lost"));
        long highestLost = granted.stream().mapToLong(FencingToken::value).max().orElseThrow();

        List<FencerProcess.Ports> restored = restoreGroup(backup);
        String[] endpoints = restored.stream().map(FencerProcess.Ports::endpoint).toArray(String[]::new);
        try (FencerClient fencer = client(endpoints);
                FencedStore store = Fencer.newStoreBuilder().endpoint(storePorts.endpoint())
                        .callTimeout(Duration.ofSeconds(30)).build()) {
            ServerStatus status = fencer.status();
            assertThat(status.generation()).isEqualTo(1);
            assertThat(status.groupFormatLevel()).isEqualTo(5);
            Session session = fencer.openSession(Duration.ofSeconds(30));
            try (Grant grant = session.lock(LOCK).acquire(Duration.ofSeconds(30))) {
                assertThat(grant.token().value()).as("first grant after the restore")
                        .isGreaterThan(highestLost).isEqualTo(FencingToken.generationBase(1) + 1);
                store.put(LOCK, "total", "written by the new holder", grant);
            }
            for (FencingToken old : List.of(granted.get(granted.size() - 1), granted.get(2))) {
                assertThatThrownBy(() -> store.put(LOCK, "total", "written by an old holder", old.sequencer()))
                        .as("old holder %s", old).isInstanceOf(StaleWriteException.class);
            }
            assertThat(new String(store.get(LOCK, "total").value(), java.nio.charset.StandardCharsets.UTF_8))
                    .isEqualTo("written by the new holder");
        }
    }

    @Test
    void restore_ofDamagedForeignOrWrongKindFile_refusedNamingTheProblemAndTheDirectoryStaysEmpty() throws Exception {
        Path damaged = dir.resolve("damaged.fbk");
        Path target = dir.resolve("target");
        FencerProcess.Ports ports = FencerProcess.Ports.free();
        FencerProcess server = track(FencerProcess.server("source", dir.resolve("source"), ports));
        server.awaitHealthy(ports.admin());
        Path good = dir.resolve("good.fbk");
        assertThat(cli("backup", "--out", good.toString(), "--server", ports.endpoint()).exit()).isZero();
        byte[] bytes = Files.readAllBytes(good);
        bytes[bytes.length / 2] ^= 0x5a;
        Files.write(damaged, bytes);
        Path foreign = Files.writeString(dir.resolve("notes.txt"), "not a backup at all");

        FencerProcess.Finished damagedRun = cli("restore", damaged.toString(), "--data", target.toString());
        FencerProcess.Finished foreignRun = cli("restore", foreign.toString(), "--data", target.toString());
        assertThat(cli("restore", good.toString(), "--data", dir.resolve("seeded").toString()).exit()).isZero();
        FencerProcess.Finished seedRun = cli("restore", dir.resolve("seeded").resolve("restore.seed").toString(), "--data",
                target.toString());
        FencerProcess.Finished generationRun = cli("restore", good.toString(), "--data", target.toString(), "--generation", "0");

        assertThat(damagedRun.exit()).isEqualTo(1);
        assertThat(damagedRun.err()).contains("damaged.fbk is damaged: its SHA-256 checksum does not match");
        assertThat(foreignRun.err()).contains("is not a Fencer backup");
        assertThat(seedRun.err()).contains("is a restored peer's seed (of fencer restore), not a backup");
        assertThat(generationRun.exit()).isEqualTo(2);
        assertThat(generationRun.err()).contains("--generation 0: it must be above the backup's generation 0");
        assertThat(Files.exists(target.resolve("restore.seed"))).isFalse();
    }

    /** Seeds three new peers from {@code backup} with the runbook's command, starts them as one group. */
    private List<FencerProcess.Ports> restoreGroup(Path backup) throws Exception {
        List<FencerProcess.Ports> ports = new ArrayList<>();
        StringBuilder group = new StringBuilder();
        for (int i = 1; i <= 3; i++) {
            FencerProcess.Ports p = FencerProcess.Ports.free();
            ports.add(p);
            group.append(i == 1 ? "" : ",").append("r").append(i).append("=127.0.0.1:").append(p.client())
                    .append(':').append(p.raft());
            FencerProcess.Finished seeded = cli("restore", backup.toString(), "--data", dir.resolve("r" + i).toString());
            assertThat(seeded.exit()).as(seeded.err()).isZero();
            assertThat(seeded.out()).contains("generation 1");
        }
        List<FencerProcess> peers = new ArrayList<>();
        for (int i = 1; i <= 3; i++) {
            peers.add(track(FencerProcess.server("r" + i, dir.resolve("r" + i), ports.get(i - 1), "--id", "r" + i,
                    "--peers", group.toString(), "--raft-secret-file", dir.resolve("r.secret").toString())));
        }
        for (int i = 0; i < 3; i++) {
            peers.get(i).awaitHealthy(ports.get(i).admin());
        }
        return ports;
    }

    private static void grantAndWrite(Session session, FencedStore store, int grants, List<FencingToken> granted) {
        for (int i = 0; i < grants; i++) {
            try (Grant grant = session.lock(LOCK).acquire(Duration.ofSeconds(30))) {
                granted.add(grant.token());
                store.put(LOCK, "total", "written under " + grant.token(), grant);
            }
        }
    }

    private static FencerClient client(String... endpoints) {
        return Fencer.newBuilder().endpoints(endpoints).callTimeout(Duration.ofSeconds(30)).build();
    }

    private FencerProcess track(FencerProcess process) {
        processes.add(process);
        return process;
    }

    /** Runs {@code fencer ARGS...} to its end and returns its exit status and output. */
    private FencerProcess.Finished cli(String... arguments) throws Exception {
        return track(FencerProcess.start("cli-" + processes.size(), dir.resolve("cli"), List.of(arguments)))
                .finish(Duration.ofSeconds(60));
    }
}
