package io.fencer.s3;

import io.fencer.testing.HolderProcess;
import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.Session;
import io.fencer.core.FencingToken;
import io.fencer.testing.FencerTestServer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.S3Object;

/**
 * The paused-holder scenario on an S3 bucket with real processes: holder A, in its own JVM, is granted the lock by a
 * real Fencer server and frozen (SIGSTOP) past its lease; B is granted the next token and writes; A, resumed, writes
 * too. Fenced, A's write is refused and B's object stays, whether A froze before its write or inside it, between its
 * fence read and its commit (the race the ETag condition closes). The check-then-act control (A checks the token
 * stamped on the object before its pause and replaces the object after) loses B's update, which shows the pause is a
 * real fault.
 */
class FencedBucketProcessTest {
    private static final Duration WAIT = Duration.ofSeconds(60);

    @TempDir
    static Path serverDir;
    private static FencerTestServer server;
    private static FencerClient fencer;
    private static S3Client s3;

    @TempDir
    Path dir;

    @BeforeAll
    static void startServers() {
        server = FencerTestServer.start(serverDir);
        fencer = Fencer.connect(server.endpoint());
        s3 = S3TestServer.get().client();
    }

    @AfterAll
    static void stopServers() {
        s3.close();
        fencer.close();
        server.close();
    }

    @Test
    void write_pausedHolderResumedAfterNewerGrantWrote_isRefusedAndNewerObjectStays() throws Exception {
        String prefix = "process/before-write/";
        try (HolderProcess a = startHolder(prefix, "reports-before")) {
            FencingToken tokenA = FencingToken.parse(a.awaitLine("GRANTED ", WAIT).substring(8));
            a.pause();
            FencingToken tokenB = writeAsB(prefix, "reports-before");
            assertThat(tokenB.value()).isGreaterThan(tokenA.value());
            assertThat(a.isAlive()).as("A is frozen, still believing it holds the lock").isTrue();

            a.resume();
            a.send("write-fenced");

            assertThat(a.awaitLine("", WAIT)).startsWith("REFUSED stale token reports-before#" + tokenA.value())
                    .contains("accepted token is reports-before#" + tokenB.value())
                    .contains("was refused at the token check, before anything was written");
            assertObjectOfB(prefix, "reports-before", tokenB);
            a.send("exit");
        }
    }

    @Test
    void write_holderPausedBetweenFenceReadAndCommit_isRefusedAndNewerObjectStays() throws Exception {
        // A passes the token check and creates its data object, then freezes right before its commit; B is granted,
        // writes and commits. A's commit is conditioned on the fence it read, which B replaced: it is refused.
        String prefix = "process/inside-write/";
        try (HolderProcess a = startHolder(prefix, "reports-inside")) {
            FencingToken tokenA = FencingToken.parse(a.awaitLine("GRANTED ", WAIT).substring(8));
            a.send("write-fenced-held");
            a.awaitLine("AT-COMMIT", WAIT);
            a.pause();
            FencingToken tokenB = writeAsB(prefix, "reports-inside");
            assertThat(tokenB.value()).isGreaterThan(tokenA.value());

            a.resume();
            a.send("go");

            assertThat(a.awaitLine("", WAIT)).startsWith("REFUSED stale token reports-inside#" + tokenA.value())
                    .contains("accepted token is reports-inside#" + tokenB.value())
                    .contains("passed the token check, but before its commit the fence was replaced by a holder of "
                            + tokenB);
            assertObjectOfB(prefix, "reports-inside", tokenB);
            assertThat(keys(prefix)).as("A's data object was deleted: the fence and B's object remain").hasSize(2);
            a.send("exit");
        }
    }

    @Test
    void checkThenAct_pausedHolderResumedAfterNewerGrantWrote_losesTheNewerUpdate() throws Exception {
        // The control: the same pause against a writer that checks the token stamped on the object, then replaces
        // the object apart from the check. B's update is lost, so the scenarios above do make the fault the fence
        // refuses.
        String prefix = "process/control/";
        StampedObject object = new StampedObject(s3, prefix + ObjectHolder.NAME);
        try (HolderProcess a = startHolder(prefix, "reports-control")) {
            FencingToken tokenA = FencingToken.parse(a.awaitLine("GRANTED ", WAIT).substring(8));
            a.send("check");
            assertThat(a.awaitLine("CHECKED ", WAIT)).isEqualTo("CHECKED true");
            a.pause();
            try (Session session = fencer.openSession(Duration.ofSeconds(10));
                    Grant grant = session.lock("reports-control").acquire(WAIT)) {
                assertThat(object.stampedToken()).isLessThanOrEqualTo(grant.token().value());
                object.put(grant.token().value(), "written by B".getBytes(StandardCharsets.UTF_8));
            }

            a.resume();
            a.send("write-unfenced");
            assertThat(a.awaitLine("", WAIT)).isEqualTo("WROTE");

            assertThat(object.content()).as("B's update is lost: A's stale bytes replaced it")
                    .isEqualTo("written by A under " + tokenA);
            assertThat(object.stampedToken()).isEqualTo(tokenA.value());
            a.send("exit");
        }
    }

    private HolderProcess startHolder(String prefix, String lock) {
        return HolderProcess.start(dir, "a", ObjectHolder.class, server.endpoint(), S3TestServer.get().endpoint(),
                prefix, lock);
    }

    /** Writer B: waits for the lock (granted once A's lease has expired) and writes its object under its token. */
    private static FencingToken writeAsB(String prefix, String lock) throws Exception {
        try (Session session = fencer.openSession(Duration.ofSeconds(10));
                Grant grant = session.lock(lock).acquire(WAIT)) {
            FencedBucket.open(s3, S3TestServer.BUCKET, prefix, lock).write(grant.token(), ObjectHolder.NAME,
                    "written by B".getBytes(StandardCharsets.UTF_8));
            return grant.token();
        }
    }

    private static void assertObjectOfB(String prefix, String lock, FencingToken tokenB) {
        FencedBucket bucket = FencedBucket.open(s3, S3TestServer.BUCKET, prefix, lock);
        FencedObject current = bucket.read(ObjectHolder.NAME).orElseThrow();
        assertThat(new String(current.content(), StandardCharsets.UTF_8)).isEqualTo("written by B");
        assertThat(current.writer()).isEqualTo(tokenB);
        assertThat(bucket.accepted()).isEqualTo(tokenB.value());
    }

    private static List<String> keys(String prefix) {
        return s3.listObjectsV2Paginator(b -> b.bucket(S3TestServer.BUCKET).prefix(prefix)).contents().stream()
                .map(S3Object::key).toList();
    }
}
