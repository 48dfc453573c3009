package io.fencer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.lock.Limits;
import io.fencer.testing.FencerTestServer;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A server whose session ttl range is narrower than the command's own (1 s to 1 h): a {@code --ttl} the command
 * accepts and the server refuses is the user's to change, so it is a usage error naming the option, its value and the
 * server's range, as one the command refuses itself is.
 */
class ServerTtlRangeTest {
    /** The server's longest session ttl: a minute, where the command allows an hour. */
    private static final long SERVER_TTL_MILLIS_MAX = 60_000;

    @TempDir
    static Path dataDir;
    private static FencerTestServer server;

    @BeforeAll
    static void startServer() {
        Limits narrow = new Limits(Limits.DEFAULT.sessionsMax(), Limits.DEFAULT.locksMax(),
                Limits.DEFAULT.waitersPerLockMax(), Limits.DEFAULT.locksPerSessionMax(), 1_000, SERVER_TTL_MILLIS_MAX);
        server = FencerTestServer.builder(dataDir).config(config -> config.withLimits(narrow)).start();
    }

    @AfterAll
    static void stopServer() {
        if (server != null) {
            server.close();
        }
    }

    @Test
    void lockAcquire_ttlOutsideTheServersRange_isAUsageErrorNamingTheOptionValueAndRange() {
        CommandRun run = CommandRun.run("lock", "acquire", "narrow/a", "--ttl", "2m", "--server", server.endpoint());

        assertThat(run.exitCode()).as(run.err()).isEqualTo(Main.EXIT_USAGE);
        assertThat(run.err()).contains("--ttl 2m", "[1000 ms, " + SERVER_TTL_MILLIS_MAX + " ms]", "server");
        assertThat(run.out()).as("nothing acquired").isEmpty();
    }

    @Test
    void lockExec_ttlOutsideTheServersRange_isAUsageErrorAndRunsNothing() {
        CommandRun run = CommandRun.run("lock", "exec", "narrow/b", "--ttl", "90s", "--server", server.endpoint(),
                "--", "sh", "-c", "echo ran");

        assertThat(run.exitCode()).as(run.err()).isEqualTo(Main.EXIT_USAGE);
        assertThat(run.err()).contains("--ttl 90s", "[1000 ms, " + SERVER_TTL_MILLIS_MAX + " ms]");
        assertThat(run.out()).doesNotContain("ran");
    }
}
