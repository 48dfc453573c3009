package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.client.FencedStore;
import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.Session;
import io.fencer.client.StaleWriteException;
import io.fencer.core.FencingToken;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The runbook's "restore the store", with real processes and the real commands: {@code fencer store backup} of a
 * running store server, more grants and accepted writes after it, the store destroyed, {@code fencer store restore}
 * with a fence. The restored store holds the backup's data, accepts the current holder and refuses every holder
 * superseded before the restore, including one whose write the lost store accepted only after the backup.
 */
class StoreBackupRestoreProcessTest {
    private static final String LOCK = "orders";

    @TempDir
    Path dir;
    private final List<FencerProcess> processes = new ArrayList<>();

    @AfterEach
    void stop() {
        processes.forEach(FencerProcess::close);
    }

    @Test
    void restore_withFenceFromOrGeneration_refusesEveryHolderSupersededAfterTheBackup() throws Exception {
        FencerProcess.Ports lockPorts = FencerProcess.Ports.free();
        FencerProcess lockGroup = track(FencerProcess.server("locks", dir.resolve("locks"), lockPorts, "--no-store"));
        FencerProcess.Ports storePorts = FencerProcess.Ports.free();
        FencerProcess lost = track(FencerProcess.storeServer("store", dir.resolve("store"), storePorts));
        lockGroup.awaitHealthy(lockPorts.admin());
        lost.awaitHealthy(storePorts.admin());
        Path backup = dir.resolve("store.fbk");
        List<FencingToken> superseded = new ArrayList<>();
        try (FencerClient fencer = client(lockPorts.endpoint())) {
            Session session = fencer.openSession(Duration.ofSeconds(60));
            try (FencedStore store = store(storePorts.endpoint())) {
                superseded.add(grantAndWrite(session, store, "before the backup"));
                superseded.add(grantAndWrite(session, store, "before the backup"));
                FencerProcess.Finished backedUp = cli("store", "backup", "--out", backup.toString(), "--store",
                        storePorts.endpoint());
                assertThat(backedUp.exit()).as(backedUp.err()).isZero();
                assertThat(backedUp.out()).contains("1 scopes, 1 keys");
                FencingToken afterBackup = grantAndWrite(session, store, "after the backup"); // the backup cannot know
                superseded.add(afterBackup);
                assertThat(store.fence(LOCK).accepted()).as("the lost store accepted it").isEqualTo(
                        afterBackup.value());
            }
            lost.kill9();
            Trees.delete(dir.resolve("store"));

            try (Grant current = session.lock(LOCK).acquire(Duration.ofSeconds(30))) {
                FencerProcess.Finished restored = cli("store", "restore", backup.toString(), "--data", dir.resolve("r1").toString(),
                        "--fence-from", lockPorts.endpoint());
                assertThat(restored.exit()).as(restored.err()).isZero();
                assertThat(restored.out()).contains("1 accepted tokens raised");
                FencerProcess.Ports r1 = FencerProcess.Ports.free();
                track(FencerProcess.storeServer("r1", dir.resolve("r1"), r1)).awaitHealthy(r1.admin());
                try (FencedStore store = store(r1.endpoint())) {
                    assertThat(text(store, "total")).as("the backup's data").isEqualTo("before the backup");
                    assertRefused(store, superseded);
                    store.put(LOCK, "total", "current holder", current);
                    assertThat(text(store, "total")).isEqualTo("current holder");
                }
            }
        }

        FencerProcess.Finished restored = cli("store", "restore", backup.toString(), "--data", dir.resolve("r2").toString(),
                "--fence-generation", "1");
        assertThat(restored.exit()).as(restored.err()).isZero();
        FencerProcess.Ports r2 = FencerProcess.Ports.free();
        track(FencerProcess.storeServer("r2", dir.resolve("r2"), r2)).awaitHealthy(r2.admin());
        try (FencedStore store = store(r2.endpoint())) {
            assertRefused(store, superseded);
            // the first grant of a lock group restored into generation 1 (tokens are unsigned here)
            store.put(LOCK, "total", "generation 1", new FencingToken(LOCK, FencingToken.generationBase(1) + 1)
                    .sequencer());
            assertThat(text(store, "total")).isEqualTo("generation 1");
        }
    }

    @Test
    void restore_ofBadInput_refusedNamingTheProblemAndTheDirectoryUnchanged() throws Exception {
        FencerProcess.Ports ports = FencerProcess.Ports.free();
        FencerProcess server = track(FencerProcess.server("source", dir.resolve("source"), ports));
        server.awaitHealthy(ports.admin());
        try (FencerClient fencer = client(ports.endpoint()); FencedStore store = store(ports.endpoint())) {
            grantAndWrite(fencer.openSession(Duration.ofSeconds(30)), store, "hosted");
        }
        Path good = dir.resolve("store.fbk");
        Path lockBackup = dir.resolve("locks.fbk");
        assertThat(cli("store", "backup", "--out", good.toString(), "--store", ports.endpoint()).exit()).isZero();
        assertThat(cli("backup", "--out", lockBackup.toString(), "--server", ports.endpoint()).exit()).isZero();
        Path damaged = dir.resolve("damaged.fbk");
        byte[] bytes = Files.readAllBytes(good);
        bytes[bytes.length / 2] ^= 0x01;
        Files.write(damaged, bytes);
        Path empty = Files.createDirectories(dir.resolve("empty"));
        Path occupied = Files.createDirectories(dir.resolve("occupied"));
        Files.writeString(occupied.resolve("CURRENT"), "an old store's file");

        FencerProcess.Finished damagedRun = cli("store", "restore", damaged.toString(), "--data", empty.toString(),
                "--fence-generation", "1");
        FencerProcess.Finished lockRun = cli("store", "restore", lockBackup.toString(), "--data", empty.toString(),
                "--fence-generation", "1");
        FencerProcess.Finished occupiedRun = cli("store", "restore", good.toString(), "--data", occupied.toString(),
                "--fence-generation", "1");
        FencerProcess.Finished unfencedRun = cli("store", "restore", good.toString(), "--data", empty.toString());

        assertThat(damagedRun.exit()).isEqualTo(1);
        assertThat(damagedRun.err()).contains("damaged.fbk is damaged: its SHA-256 checksum does not match");
        assertThat(lockRun.exit()).isEqualTo(1);
        assertThat(lockRun.err()).contains("is a lock group's backup (of fencer backup), not a store backup");
        assertThat(occupiedRun.exit()).isEqualTo(1);
        assertThat(occupiedRun.err()).contains("the directory is not empty");
        assertThat(unfencedRun.exit()).isEqualTo(2);
        assertThat(unfencedRun.err()).contains("store restore needs exactly one fence option");
        assertThat(listing(empty)).isEmpty();
        assertThat(listing(occupied)).containsExactly(occupied.resolve("CURRENT"));
        assertThat(Files.readString(occupied.resolve("CURRENT"))).isEqualTo("an old store's file");
        assertThat(dir.resolve("empty.restoring")).doesNotExist();
        FencerProcess.Finished fine = cli("store", "restore", good.toString(), "--data", empty.toString(), "--fence-generation", "1");
        assertThat(fine.exit()).as("control: the good file restores into the same directory").isZero();
    }

    /** Grants the lock, writes under the grant, releases; returns the grant's token. */
    private static FencingToken grantAndWrite(Session session, FencedStore store, String value) {
        try (Grant grant = session.lock(LOCK).acquire(Duration.ofSeconds(30))) {
            store.put(LOCK, "total", value, grant);
            return grant.token();
        }
    }

    private static void assertRefused(FencedStore store, List<FencingToken> tokens) {
        for (FencingToken old : tokens) {
            assertThatThrownBy(() -> store.put(LOCK, "total", "old holder", old.sequencer()))
                    .as("superseded holder %s", old).isInstanceOf(StaleWriteException.class);
        }
    }

    private static String text(FencedStore store, String key) {
        return new String(store.get(LOCK, key).value(), StandardCharsets.UTF_8);
    }

    private static FencerClient client(String endpoint) {
        return Fencer.newBuilder().endpoints(endpoint).callTimeout(Duration.ofSeconds(30)).build();
    }

    private static FencedStore store(String endpoint) {
        return Fencer.newStoreBuilder().endpoint(endpoint).callTimeout(Duration.ofSeconds(30)).build();
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

    private static List<Path> listing(Path directory) throws Exception {
        try (Stream<Path> entries = Files.list(directory)) {
            return entries.toList();
        }
    }
}
