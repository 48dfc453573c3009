package io.fencer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.load.HttpLockCalls;
import io.fencer.load.LockBench;
import io.fencer.testing.FencerTestServer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code fencer bench lock --http}: the lock bench's cycles over the HTTP port of a real server, with plain HTTP. */
class BenchLockHttpTest {
    @TempDir
    static Path dataDir;
    private static FencerTestServer server;

    @BeforeAll
    static void startServer() throws Exception {
        server = FencerTestServer.builder(dataDir).config(config -> config.withHttpPort(0)).start();
    }

    @AfterAll
    static void stopServer() {
        server.close();
    }

    private static long jsonLong(String json, String name) {
        Matcher matcher = Pattern.compile("\"" + name + "\":(\\d+)").matcher(json);
        assertThat(matcher.find()).as("%s in %s", name, json).isTrue();
        return Long.parseLong(matcher.group(1));
    }

    @Test
    void benchLockHttp_shortRun_completesCyclesWithStrictlyIncreasingTokens() {
        CommandRun run = CommandRun.run("bench", "lock", "--duration", "2s", "--warmup", "0s", "--clients", "4",
                "--json", "--http", "http://127.0.0.1:" + server.server().httpPort());

        assertThat(run.exitCode()).as(run.err() + run.out()).isZero();
        assertThat(run.out()).contains("\"tokensStrictlyIncreasing\":true", "\"errors\":0");
        assertThat(jsonLong(run.out(), "cycles")).isPositive();
    }

    @Test
    void lockBenchHttp_clientsContendingForOneLock_tokensStrictlyIncrease() throws Exception {
        LockBench.Result result;
        try (HttpLockCalls calls = new HttpLockCalls("http://127.0.0.1:" + server.server().httpPort())) {
            result = LockBench.run(calls, new LockBench.Settings(4, 1, Duration.ofSeconds(2), Duration.ZERO,
                    Duration.ofSeconds(10)));
        }

        assertThat(result.cycles()).isPositive();
        assertThat(result.tokensChecked()).isGreaterThanOrEqualTo(result.cycles());
        assertThat(result.tokensIncreasing()).as(result.firstViolation()).isTrue();
        assertThat(result.errors()).as(result.firstError()).isZero();
    }

    @Test
    void httpUrl_ofAnEndpoint_isItsPortPlusThree() {
        assertThat(BenchLockCommand.httpUrl("127.0.0.1:7070")).isEqualTo("http://127.0.0.1:7073");
        assertThat(BenchLockCommand.httpUrl("[::1]:9000")).isEqualTo("http://[::1]:9003");
    }
}
