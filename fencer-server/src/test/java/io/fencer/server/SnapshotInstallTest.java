package io.fencer.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.ByteString;
import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.Op;
import io.fencer.api.v1.Put;
import io.fencer.api.v1.StoreGrpc;
import io.fencer.api.v1.WriteRequest;
import io.fencer.core.FencingToken;
import io.fencer.core.Sequencer;
import io.fencer.server.TestServers.TestSession;
import io.fencer.store.ReadResult;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A peer added to a group whose leader no longer holds the start of its log (taken into a snapshot, then purged, as a
 * group that ran for months does) cannot replay the log: the leader sends it the snapshot in chunks over the Raft port,
 * and it starts from that. Its locks and its replica of the store must be the leader's. Before, the log is kept whole
 * while a peer of the configuration is down, and purged once that peer is removed.
 *
 * <p>Regression: the state machine never paused for Ratis, which reloads a machine from an installed snapshot only
 * if it is paused; the new peer's applier failed ("caught a Throwable") and the peer closed, holding nothing.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class SnapshotInstallTest {
    /**
     * Ratis closes a log segment at 32 MB (RaftNode) and purges only closed ones, and only 1,024 entries or more
     * after its last purge: 1,300 entries of 32 KiB close the first segment and reach the gap.
     */
    private static final int WRITES = 1_300;
    private static final int VALUE_BYTES = 32 * 1024;
    /** Distinct keys: a replica of about 10 MiB, so that the snapshot crosses the port in several 4 MB chunks. */
    private static final int KEYS = 320;
    private static final Duration WAIT = Duration.ofSeconds(120);

    @TempDir
    Path dataRoot;

    @AutoClose
    private PeerGroup group;

    @Test
    void add_afterTheLeaderPurgedItsLog_theNewPeerStartsFromTheInstalledSnapshotWithTheLocksAndTheStore()
            throws Exception {
        group = new PeerGroup(dataRoot, 3, UnaryOperator.identity(), false).startFounders();
        String leader = group.awaitLeader();
        LocksGrpc.LocksBlockingStub locks = TestServers.stub(group.channel(leader));
        TestSession session = TestServers.openSession(locks, 180_000);
        AcquireResponse granted = TestServers.acquire(locks, session, "orders", 0);
        String down = group.aFollower(leader);
        group.stop(down);
        byte[][] last = writeBulk(leader);

        // A peer that is down keeps the log: nothing is deleted that it has not committed.
        long kept = group.server(leader).takeSnapshot();
        Thread.sleep(1_000); // Ratis decides to purge right after the snapshot; give the deletion time to show
        assertThat(files(leader, "log_0-")).as("the first segment, kept for the peer that is down").isNotEmpty();
        double keptBytes = logBytes(leader);
        assertThat(keptBytes).as("fencer_raft_log_bytes while a peer is down").isGreaterThan(32e6);
        group.remove(leader, down);
        long snapshotIndex = group.snapshotAbove(leader, kept);
        // The control for what follows: the log's first segment is gone, so a new peer cannot replay from index 0.
        await().atMost(WAIT).until(() -> files(leader, "log_0-").isEmpty());
        assertThat(logBytes(leader)).as("fencer_raft_log_bytes once the peer is removed").isLessThan(keptBytes);

        PeerGroup.Member n4 = group.newJoiner(4);
        group.start(n4.id());
        group.add(leader, n4);
        group.awaitCaughtUp(leader, n4.id());

        // Caught up is the leader's view of the log; the peer may still be loading the snapshot (its replica closed,
        // reads answer UNAVAILABLE), so wait until its replica answers with the last value written.
        await().atMost(WAIT).ignoreExceptions().until(() -> Arrays.equals(localValue(n4.id(), "k" + (KEYS - 1)),
                last[KEYS - 1]));
        // The control that the install ran: the new peer holds the leader's snapshot of an index it never applied.
        assertThat(files(n4.id(), "snapshot.")).as("the snapshot the leader installed on the new peer")
                .anyMatch(path -> path.getFileName().toString().endsWith("_" + snapshotIndex));
        for (int key = 0; key < KEYS; key += 31) {
            assertThat(localValue(n4.id(), "k" + key)).as("key k%d on the new peer", key).isEqualTo(last[key]);
        }
        assertThat(group.server(n4.id()).store().engine().accepted("bulk")).isEqualTo(2);
        // Promoted, it votes on every grant that follows; the token counter goes on above the earlier grant.
        group.promote(leader, n4.id());
        TestServers.release(locks, session, granted.getToken());
        AcquireResponse after = TestServers.acquire(locks, session, "orders", 0);
        assertThat(after.getToken().getValue()).isGreaterThan(granted.getToken().getValue());
    }

    /**
     * Regression: a group of one keeps its store beside the log, and its snapshots held no store. Ratis sends a new
     * peer the leader's latest snapshot whenever there is one (a group that stopped once has one), so the first peer
     * added refused it ("holds no replicated store") and closed: a group of one could not grow once it had a snapshot.
     */
    @Test
    void add_toAGroupOfOneWithASnapshot_theNewPeerStartsFromItWithAnEmptyReplicatedStore() throws Exception {
        group = new PeerGroup(dataRoot, 1, UnaryOperator.identity(), false).startFounders();
        String founder = group.awaitLeader();
        LocksGrpc.LocksBlockingStub locks = TestServers.stub(group.channel(founder));
        TestSession session = TestServers.openSession(locks, 60_000);
        AcquireResponse granted = TestServers.acquire(locks, session, "orders", 0);
        long snapshotIndex = group.server(founder).takeSnapshot();

        PeerGroup.Member n2 = group.newJoiner(2);
        group.start(n2.id());
        group.add(founder, n2);
        group.awaitCaughtUp(founder, n2.id());

        assertThat(files(n2.id(), "snapshot.")).as("the snapshot the founder installed on the new peer")
                .anyMatch(path -> path.getFileName().toString().endsWith("_" + snapshotIndex));
        await().atMost(WAIT).until(() -> group.server(n2.id()).appliedIndex() > snapshotIndex);
        assertThat(group.server(n2.id()).notInGroup()).isNull();
        assertThat(group.server(n2.id()).store().engine().accepted("orders")).isZero();
        group.promote(founder, n2.id());
        TestServers.release(locks, session, granted.getToken());
        assertThat(TestServers.acquire(locks, session, "orders", 0).getToken().getValue())
                .isGreaterThan(granted.getToken().getValue());
    }

    /**
     * A group of one upgraded from the release whose snapshots held no store: its latest snapshot is one a new peer
     * refuses. Once it leads again it takes a new one that holds the (empty) store, so it can grow at once.
     */
    @Test
    void add_toAGroupOfOneWhoseSnapshotHoldsNoStore_theFounderRenewsItAndTheNewPeerStarts() throws Exception {
        group = new PeerGroup(dataRoot, 1, UnaryOperator.identity(), false).startFounders();
        String founder = group.awaitLeader();
        TestServers.openSession(TestServers.stub(group.channel(founder)), 60_000);
        long oldIndex = group.server(founder).takeSnapshot();
        group.stop(founder);
        Path old = asOfThePreviousRelease(latestSnapshot(founder));
        assertThat(old.getFileName().toString()).endsWith("_" + oldIndex);

        group.start(founder);
        group.awaitLeader();
        // The control that the old snapshot was loaded and replaced: a newer one, taken without a stop.
        await().atMost(WAIT).until(() -> snapshotIndex(latestSnapshot(founder)) > oldIndex);
        PeerGroup.Member n2 = group.newJoiner(2);
        group.start(n2.id());
        group.add(founder, n2);
        group.awaitCaughtUp(founder, n2.id());

        await().atMost(WAIT).until(() -> group.server(n2.id()).appliedIndex() > oldIndex);
        assertThat(group.server(n2.id()).notInGroup()).isNull();
        assertThat(group.server(n2.id()).store().replicated()).isTrue();
        // No longer alone, the founder's snapshots go on holding the store: it may still restart into the group.
        Path next = latestSnapshot(founder);
        group.snapshotAbove(founder, snapshotIndex(next));
        assertThat(java.nio.ByteBuffer.wrap(Files.readAllBytes(latestSnapshot(founder))).getInt(Integer.BYTES))
                .as("the format version of the founder's next snapshot").isEqualTo(2);
    }

    /**
     * Rewrites {@code snapshot} as the previous release wrote a group of one's: format version 1, no store section
     * (this release's ends with an empty store backup), and a new MD5 file beside it.
     */
    private static Path asOfThePreviousRelease(Path snapshot) throws IOException {
        byte[] bytes = Files.readAllBytes(snapshot);
        int withoutStore = bytes.length - io.fencer.store.StoreBackupFile.empty(0).length;
        java.nio.ByteBuffer.wrap(bytes).putInt(Integer.BYTES, 1);
        Files.write(snapshot, java.util.Arrays.copyOf(bytes, withoutStore));
        org.apache.ratis.util.MD5FileUtil.computeAndSaveMd5ForFile(snapshot.toFile());
        return snapshot;
    }

    private Path latestSnapshot(String id) {
        return files(id, "snapshot.").stream().filter(path -> !path.toString().endsWith(".md5"))
                .max(java.util.Comparator.comparingLong(SnapshotInstallTest::snapshotIndex)).orElseThrow();
    }

    private static long snapshotIndex(Path snapshot) {
        String name = snapshot.getFileName().toString();
        return Long.parseLong(name.substring(name.lastIndexOf('_') + 1));
    }

    /**
     * Writes {@link #WRITES} values of {@link #VALUE_BYTES} bytes to {@link #KEYS} keys, one after another, so that
     * each is a log entry of its own (writes in flight together share one); returns each key's last value.
     */
    private byte[][] writeBulk(String leader) {
        byte[][] last = new byte[KEYS][];
        StoreGrpc.StoreBlockingStub store = StoreGrpc.newBlockingStub(group.channel(leader));
        Random random = new Random(42);
        for (int i = 0; i < WRITES; i++) {
            byte[] value = new byte[VALUE_BYTES];
            random.nextBytes(value);
            store.withDeadlineAfter(30, TimeUnit.SECONDS).write(write("k" + i % KEYS, value));
            last[i % KEYS] = value;
        }
        return last;
    }

    private static WriteRequest write(String key, byte[] value) {
        return WriteRequest.newBuilder().setScope("bulk").setSequencer(Sequencer.format(new FencingToken("bulk", 2)))
                .addOps(Op.newBuilder().setPut(Put.newBuilder().setKey(ByteString.copyFromUtf8(key))
                        .setValue(ByteString.copyFrom(value)))).build();
    }

    private byte[] localValue(String peer, String key) {
        ReadResult read = group.server(peer).store().engine().get("bulk", key.getBytes(StandardCharsets.UTF_8), null);
        return read.present() ? read.value() : null;
    }

    /** Returns peer {@code id}'s {@code fencer_raft_log_bytes}, read from its admin port's {@code /metrics}. */
    private double logBytes(String id) throws Exception {
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + group.server(id).adminPort()
                + "/metrics")).timeout(Duration.ofSeconds(20)).GET().build();
        String body = HttpClient.newHttpClient().send(request, HttpResponse.BodyHandlers.ofString()).body();
        Matcher gauge = Pattern.compile("(?m)^fencer_raft_log_bytes (\\S+)$").matcher(body);
        assertThat(gauge.find()).as("fencer_raft_log_bytes in /metrics").isTrue();
        return Double.parseDouble(gauge.group(1));
    }

    /** Returns the files under peer {@code id}'s data directory whose names start with {@code prefix}. */
    private List<Path> files(String id, String prefix) {
        for (int attempt = 1; ; attempt++) {
            try (Stream<Path> walk = Files.walk(dataRoot.resolve(id))) {
                return walk.filter(path -> path.getFileName().toString().startsWith(prefix)).toList();
            } catch (IOException | UncheckedIOException e) {
                // The peer deletes old snapshots and segments as it goes: a file the walk saw may be gone; walk again.
                if (attempt == 10) {
                    throw new AssertionError("cannot list " + dataRoot.resolve(id), e);
                }
            }
        }
    }
}
