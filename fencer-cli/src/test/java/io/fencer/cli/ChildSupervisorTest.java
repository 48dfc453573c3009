package io.fencer.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.fencer.core.FencingToken;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The supervision of {@code fencer lock exec}'s child, with real child processes and no server. */
class ChildSupervisorTest {
    private static final FencingToken TOKEN = new FencingToken("orders", 32);
    private static final Duration GENEROUS = Duration.ofSeconds(30);

    @TempDir
    Path directory;

    private final StringWriter err = new StringWriter();
    private final List<ProcessHandle> started = new ArrayList<>();
    private String commandName;

    @AfterEach
    void killLeftovers() {
        for (ProcessHandle process : started) {
            process.descendants().forEach(ProcessHandle::destroyForcibly);
            process.destroyForcibly();
        }
    }

    @Test
    void supervise_childExitsByItself_passesItsStatusThrough() throws Exception {
        Process child = start("sh", "-c", "exit 7");

        int status = supervisor(child, Duration.ofSeconds(5)).supervise(new CompletableFuture<>(),
                new CompletableFuture<>());

        assertThat(status).isEqualTo(7);
        assertThat(err.toString()).isEmpty();
    }

    @Test
    void supervise_childSucceeds_returnsZero() throws Exception {
        Process child = start("true");

        assertThat(supervisor(child, Duration.ofSeconds(5)).supervise(new CompletableFuture<>(),
                new CompletableFuture<>())).isZero();
    }

    @Test
    void processBuilder_token_putsLockSequencerAndValueInTheChildsEnvironment() throws Exception {
        Process child = start("sh", "-c",
                "echo \"$FENCER_LOCK|$FENCER_TOKEN|$FENCER_TOKEN_VALUE|$HOME\"");

        int status = supervisor(child, Duration.ofSeconds(5)).supervise(new CompletableFuture<>(),
                new CompletableFuture<>());

        assertThat(status).isZero();
        assertThat(output().strip()).isEqualTo("orders|fencer1.b3JkZXJz.32|32|" + System.getenv("HOME"));
    }

    @Test
    void supervise_leaseLost_stopsTheChildWithSigtermAndReturnsThree() throws Exception {
        Process child = start("sleep", "60");
        CompletableFuture<String> leaseLost = new CompletableFuture<>();
        ChildSupervisor supervisor = supervisor(child, GENEROUS);

        CompletableFuture<Integer> status = CompletableFuture.supplyAsync(() -> superviseUnchecked(supervisor,
                leaseLost, new CompletableFuture<>()));
        leaseLost.complete("session 5 expired");

        assertThat(status.get(GENEROUS.toSeconds(), TimeUnit.SECONDS))
                .isEqualTo(ChildSupervisor.EXIT_LEASE_LOST);
        assertThat(child.isAlive()).isFalse();
        assertThat(child.exitValue()).as("ended by SIGTERM (128 + 15)").isEqualTo(143);
        assertThat(err.toString()).isEqualTo("fencer: lease on orders#32 lost: session 5 expired; stopping sleep"
                + System.lineSeparator());
    }

    @Test
    void supervise_leaseLost_sendsSigtermFirst() throws Exception {
        Process child = start("sh", "-c",
                "trap 'echo got-term; exit 0' TERM; echo ready; while :; do sleep 0.1; done");
        awaitOutput("ready");

        int status = supervisor(child, GENEROUS).supervise(CompletableFuture.completedFuture("expired"),
                new CompletableFuture<>());

        assertThat(status).isEqualTo(ChildSupervisor.EXIT_LEASE_LOST);
        assertThat(output()).contains("got-term");
        assertThat(child.exitValue()).as("the child's own trap ended it").isZero();
    }

    @Test
    void supervise_leaseLostAndChildIgnoresSigterm_killsItAfterTheGrace() throws Exception {
        Process child = start("sh", "-c", "trap '' TERM; echo ready; sleep 60; echo done");
        awaitOutput("ready");
        List<ProcessHandle> tree = new ArrayList<>(child.descendants().collect(Collectors.toList()));
        tree.add(child.toHandle());

        int status = supervisor(child, Duration.ofMillis(300)).supervise(
                CompletableFuture.completedFuture("no keepalive acknowledged for 10000 ms"), new CompletableFuture<>());

        assertThat(status).isEqualTo(ChildSupervisor.EXIT_LEASE_LOST);
        assertThat(child.exitValue()).as("ended by SIGKILL (128 + 9)").isEqualTo(137);
        await().atMost(GENEROUS).until(() -> tree.stream().noneMatch(ProcessHandle::isAlive));
        assertThat(output()).doesNotContain("done");
        assertThat(err.toString()).contains("lost: no keepalive acknowledged for 10000 ms; stopping sh");
    }

    @Test
    void supervise_stopRequested_stopsTheChildAndReturnsItsStatus() throws Exception {
        Process child = start("sleep", "60");

        int status = supervisor(child, GENEROUS).supervise(new CompletableFuture<>(),
                CompletableFuture.completedFuture("INT"));

        assertThat(status).isEqualTo(143);
        assertThat(child.isAlive()).isFalse();
        assertThat(err.toString()).as("a requested stop is no error").isEmpty();
    }

    private Process start(String... command) throws IOException {
        commandName = command[0];
        ProcessBuilder builder = ChildSupervisor.processBuilder(List.of(command), TOKEN, TOKEN.sequencer())
                .redirectOutput(directory.resolve("out.txt").toFile())
                .redirectErrorStream(true);
        Process process = builder.start();
        started.add(process.toHandle());
        return process;
    }

    private ChildSupervisor supervisor(Process child, Duration killAfter) {
        return new ChildSupervisor(child, commandName, TOKEN, killAfter, new PrintWriter(err, true));
    }

    private String output() throws IOException {
        return Files.readString(directory.resolve("out.txt"), StandardCharsets.UTF_8);
    }

    private void awaitOutput(String text) {
        await().atMost(GENEROUS).until(() -> output().contains(text));
    }

    private static int superviseUnchecked(ChildSupervisor supervisor, CompletableFuture<String> leaseLost,
            CompletableFuture<String> stop) {
        try {
            return supervisor.supervise(leaseLost, stop);
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }
}
