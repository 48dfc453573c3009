package io.fencer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.function.LongFunction;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code fencer server --join}'s wait to be added, against a server whose answers the test scripts by the time since
 * the wait began: the group's traffic is what keeps a wait that ran out going. The server side of that traffic, a
 * joiner hearing the leader once added, is {@code MembershipTest}'s.
 */
class JoinWaitTest {
    private static final Duration WAIT = Duration.ofMillis(600);

    @TempDir
    Path data;
    private final StringWriter err = new StringWriter();

    /** Regression: a wait that ran out while the leader copied a large snapshot to the peer gave up mid-copy. */
    @Test
    void awaitAdded_waitRunsOutWhileTheGroupCopiesItsState_waitsOnUntilAdded() throws Exception {
        JoinSteps steps = joinSteps();
        Scripted joiner = new Scripted(sinceStart -> sinceStart < 1_500 ? "not added yet" : null,
                sinceStart -> Duration.ofMillis(50));

        assertThat(steps.awaitAdded(joiner, WAIT)).isTrue();

        assertThat(joiner.elapsedMillis()).as("added past the wait: the fault was exercised")
                .isGreaterThan(WAIT.toMillis());
        assertThat(err.toString()).contains("--join-wait 600ms ran out while the group copies its state to this peer")
                .contains("peer n4 is in the group's configuration");
        assertThat(joiner.closed).isFalse();
    }

    @Test
    void awaitAdded_theGroupFallsSilentAfterTheWait_givesUpSayingSo() throws Exception {
        JoinSteps steps = joinSteps();
        Scripted joiner = new Scripted(sinceStart -> "not added yet",
                sinceStart -> sinceStart < 1_000 ? Duration.ofMillis(50) : Duration.ofSeconds(11));

        assertThat(steps.awaitAdded(joiner, WAIT)).isFalse();

        assertThat(joiner.elapsedMillis()).isGreaterThanOrEqualTo(1_000);
        assertThat(err.toString()).contains("ran out while the group copies")
                .contains("did not add peer n4 within 600ms (--join-wait), and sent it nothing for the last 10s")
                .contains("fencer peers add n4 --raft 127.0.0.1:17072");
        assertThat(joiner.closed).isTrue();
    }

    /** The control: a group that never sent anything is given up on when the wait runs out, as before. */
    @Test
    void awaitAdded_theGroupNeverSentAnything_givesUpAtTheWait() throws Exception {
        JoinSteps steps = joinSteps();
        Scripted joiner = new Scripted(sinceStart -> "not added yet", sinceStart -> null);

        assertThat(steps.awaitAdded(joiner, WAIT)).isFalse();

        assertThat(joiner.elapsedMillis()).isBetween(WAIT.toMillis(), WAIT.toMillis() + 5_000);
        assertThat(err.toString()).contains("did not add peer n4 within 600ms (--join-wait): run fencer peers add n4")
                .doesNotContain("copies");
        assertThat(joiner.closed).isTrue();
    }

    private JoinSteps joinSteps() {
        CommandLine commandLine = Main.newCommandLine(new Main());
        commandLine.setErr(new PrintWriter(err, true));
        commandLine.parseArgs("server", "--id", "n4", "--join", "127.0.0.1:17170", "--data", data.toString(),
                "--port", "17070", "--raft-port", "17072", "--raft-secret-file",
                data.resolve("raft.secret").toString());
        ServerCommand server = commandLine.getSubcommands().get("server").getCommand();
        return new JoinSteps(server.spec, server.join, server.config(), server.tls);
    }

    /** A joining server whose answers are functions of the milliseconds since it was made. */
    private static final class Scripted implements JoinSteps.Joiner {
        private final long startNanos = System.nanoTime();
        private final LongFunction<String> notInGroup;
        private final LongFunction<Duration> sincePeerTraffic;
        volatile boolean closed;

        Scripted(LongFunction<String> notInGroup, LongFunction<Duration> sincePeerTraffic) {
            this.notInGroup = notInGroup;
            this.sincePeerTraffic = sincePeerTraffic;
        }

        long elapsedMillis() {
            return Duration.ofNanos(System.nanoTime() - startNanos).toMillis();
        }

        @Override
        public String notInGroup() {
            return notInGroup.apply(elapsedMillis());
        }

        @Override
        public Duration sincePeerTraffic() {
            return sincePeerTraffic.apply(elapsedMillis());
        }

        @Override
        public void close() {
            closed = true;
        }
    }
}
