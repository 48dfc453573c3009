package io.fencer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.Session;
import io.fencer.testing.FencerTestServer;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code fencer kv} and {@code fencer bench store} run in process against a real server in this JVM that hosts the
 * store beside the lock service (real Ratis, real RocksDB with fsync, real gRPC), with tokens of real grants.
 */
class KvEndToEndTest {
    @TempDir
    static Path dataDir;

    private static FencerTestServer server;
    private static FencerClient fencer;
    private static String endpoint;

    @BeforeAll
    static void startServer() throws Exception {
        server = FencerTestServer.start(dataDir);
        endpoint = server.endpoint();
        fencer = Fencer.connect(endpoint);
    }

    @AfterAll
    static void stopServer() {
        if (fencer != null) {
            fencer.close();
        }
        if (server != null) {
            server.close();
        }
    }

    /** Returns two grants of {@code lock}, the first already released: older and newer tokens. */
    private static Grant[] twoGrants(String lock, Session session) {
        Grant older = session.lock(lock).acquire(Duration.ofSeconds(30));
        older.close();
        return new Grant[] {older, session.lock(lock).acquire(Duration.ofSeconds(30))};
    }

    @Test
    void putGetFenceDelete_withARealGrant_roundTrip() {
        try (Session session = fencer.openSession(Duration.ofSeconds(10));
             Grant grant = session.lock("kv-basic").acquire(Duration.ofSeconds(30))) {
            String token = grant.token().toString();

            CommandRun put = CommandRun.run("kv", "put", "kv-basic", "order-17", "paid", "--token", grant.sequencer(),
                    "--store", endpoint);
            CommandRun get = CommandRun.run("kv", "get", "kv-basic", "order-17", "--store", endpoint);
            CommandRun getJson = CommandRun.run("kv", "get", "kv-basic", "order-17", "--json", "--token",
                    grant.sequencer(), "--store", endpoint);
            CommandRun fence = CommandRun.run("kv", "fence", "kv-basic", "--store", endpoint);
            CommandRun delete = CommandRun.run("kv", "delete", "kv-basic", "order-17", "--token", grant.sequencer(),
                    "--store", endpoint);
            CommandRun gone = CommandRun.run("kv", "get", "kv-basic", "order-17", "--store", endpoint);

            assertThat(put.exitCode()).as(put.err()).isZero();
            assertThat(put.out().strip()).isEqualTo("ok: put 'order-17' in scope 'kv-basic' with " + token
                    + " (accepted " + token + ", revision 1)");
            assertThat(get.out()).isEqualTo("paid\n");
            assertThat(getJson.out()).contains("\"found\":true", "\"value\":\"paid\"",
                    "\"writtenBy\":" + grant.token().value(), "\"accepted\":" + grant.token().value());
            assertThat(fence.out().strip()).isEqualTo("scope 'kv-basic': lock 'kv-basic', policy AT_LEAST, accepted "
                    + token + ", revision 1");
            assertThat(delete.exitCode()).as(delete.err()).isZero();
            assertThat(delete.out()).contains("ok: deleted 'order-17'", "revision 2");
            assertThat(gone.exitCode()).isEqualTo(Main.EXIT_ERROR);
            assertThat(gone.err()).contains("fencer: no key 'order-17' in scope 'kv-basic'");
        }
    }

    @Test
    void put_staleToken_exitsFiveWithTheRefusalAndTheDiagnosis() {
        try (Session session = fencer.openSession(Duration.ofSeconds(10))) {
            Grant[] grants = twoGrants("kv-stale", session);
            long older = grants[0].token().value();
            long newer = grants[1].token().value();
            assertThat(CommandRun.run("kv", "put", "kv-stale", "k", "by B", "--token", grants[1].sequencer(),
                    "--store", endpoint).exitCode()).isZero();

            CommandRun plain = CommandRun.run("kv", "put", "kv-stale", "k", "by A", "--token", grants[0].sequencer(),
                    "--store", endpoint);
            CommandRun diagnosed = CommandRun.run("kv", "put", "kv-stale", "k", "by A", "--token",
                    grants[0].sequencer(), "--store", endpoint, "--server", endpoint);
            CommandRun fencedRead = CommandRun.run("kv", "get", "kv-stale", "k", "--token", grants[0].sequencer(),
                    "--store", endpoint);

            String refusal = "fencer: stale token kv-stale#" + older + " refused by scope 'kv-stale': accepted "
                    + "kv-stale#" + newer;
            assertThat(plain.exitCode()).isEqualTo(Main.EXIT_STALE);
            assertThat(plain.err().strip()).isEqualTo(refusal);
            assertThat(diagnosed.exitCode()).isEqualTo(Main.EXIT_STALE);
            assertThat(diagnosed.err()).startsWith(refusal).contains("fencer: diagnosis: SUPERSEDED: kv-stale#"
                    + older + " was superseded", "is kv-stale#" + newer);
            assertThat(fencedRead.exitCode()).isEqualTo(Main.EXIT_STALE);
            assertThat(CommandRun.run("kv", "get", "kv-stale", "k", "--store", endpoint).out()).isEqualTo("by B\n");
            grants[1].close();
        }
    }

    @Test
    void put_sameIdempotencyKeyTwice_isAppliedOnceAndReplayed() {
        try (Session session = fencer.openSession(Duration.ofSeconds(10));
             Grant grant = session.lock("kv-idem").acquire(Duration.ofSeconds(30))) {
            String[] args = {"kv", "put", "kv-idem", "k", "v", "--token", grant.sequencer(), "--store", endpoint,
                "--idempotency-key", "order-17-paid", "--json"};

            CommandRun first = CommandRun.run(args);
            CommandRun second = CommandRun.run(args);

            assertThat(first.out()).contains("\"revision\":1", "\"replayed\":false");
            assertThat(second.out()).contains("\"revision\":1", "\"replayed\":true");
        }
    }

    @Test
    void benchStore_shortRun_acknowledgesWritesWithoutStaleRefusals() {
        CommandRun run = CommandRun.run("bench", "store", "--writers", "4", "--scopes", "2", "--value-bytes", "64",
                "--duration", "1s", "--warmup", "0s", "--json", "--server", endpoint, "--store", endpoint);

        assertThat(run.exitCode()).as(run.err()).isZero();
        assertThat(run.out()).contains("\"writers\":4", "\"scopes\":2", "\"staleRefusals\":0", "\"errors\":0")
                .doesNotContain("\"writes\":0,");
    }
}
