package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.client.FencedStore;
import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.Session;
import io.fencer.core.LimitExceededException;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.ResourceAccessMode;
import org.junit.jupiter.api.parallel.ResourceLock;

/**
 * A real {@code fencer server} (with its store) whose data directory is on a small file system that fills up: a
 * 48 MiB tmpfs mounted by the test (CI runs as root; elsewhere the test is skipped, loudly). While it is full, new
 * sessions, grants and store writes are refused RESOURCE_EXHAUSTED naming the data directory, reads still answer,
 * the process stays up, and everything acknowledged before is still there; once space is freed, service resumes by
 * itself, with tokens above every earlier one. It starts processes and bounds no duration, so it holds
 * {@link TestResources#CHAOS} to read: never beside a chaos run.
 */
@ResourceLock(value = TestResources.CHAOS, mode = ResourceAccessMode.READ)
class DiskFullProcessTest {
    private static final String SIZE = "48m";
    private static final Duration CALL_TIMEOUT = Duration.ofSeconds(30);

    @TempDir
    Path dir;
    private Path mount;
    private final List<AutoCloseable> toClose = new ArrayList<>();

    @BeforeEach
    void mountSmallFileSystem() throws Exception {
        mount = Files.createDirectories(dir.resolve("small"));
        String failure = HostCommands.run("mount", "-t", "tmpfs", "-o", "size=" + SIZE, "tmpfs", mount.toString());
        if (failure != null) {
            // Only a machine where the test may not mount skips it: CI runs as root, where a failure fails it.
            System.err.println("DiskFullProcessTest SKIPPED: cannot mount a tmpfs (needs root): " + failure);
            assertThat(HostCommands.uid()).as("running as root, yet mounting a tmpfs failed: %s", failure)
                    .isNotEqualTo("0");
            Assumptions.abort("DiskFullProcessTest needs root to mount a small tmpfs: " + failure);
        }
    }

    @AfterEach
    void closeAllAndUnmount() throws Exception {
        for (int i = toClose.size() - 1; i >= 0; i--) {
            toClose.get(i).close();
        }
        if (mount != null) {
            HostCommands.run("umount", "-l", mount.toString());
        }
    }

    @Test
    void fullDataDirectory_writesRefusedNamingIt_readsServed_resumesWhenFreed() throws Exception {
        Path data = mount.resolve("data");
        FencerProcess.Ports ports = FencerProcess.Ports.free();
        FencerProcess server = closing(FencerProcess.start("locks", dir, List.of("server", "--data", data.toString(),
                "--port", Integer.toString(ports.client()), "--admin-port", Integer.toString(ports.admin()),
                "--raft-port", Integer.toString(ports.raft()), "--http-port", "0")));
        server.awaitHealthy(ports.admin());
        FencerClient fencer = closing(Fencer.newBuilder().endpoints(ports.endpoint()).callTimeout(CALL_TIMEOUT)
                .build());
        FencedStore store = closing(Fencer.newStoreBuilder().endpoint(ports.endpoint()).lockService(fencer)
                .callTimeout(CALL_TIMEOUT).build());
        Session session = closing(fencer.openSession(Duration.ofSeconds(60)));
        Grant before = session.lock("orders").acquire(CALL_TIMEOUT);
        store.put("orders", "order-17", "acknowledged", before);

        Path filler = mount.resolve("filler");
        long filled = fill(filler);
        long free = Files.getFileStore(mount).getUsableSpace();
        assertThat(free).as("the control: the file system is really full (%d bytes filled)", filled)
                .isLessThan(1L << 20);
        Thread.sleep(500); // past the server's last reading of the free space

        assertThatThrownBy(() -> fencer.openSession(Duration.ofSeconds(10)))
                .isInstanceOf(LimitExceededException.class).hasMessageContaining(data.toString())
                .hasMessageContaining("bytes free");
        assertThatThrownBy(() -> session.lock("invoices").acquire(CALL_TIMEOUT))
                .isInstanceOf(LimitExceededException.class).hasMessageContaining(data.toString());
        assertThatThrownBy(() -> store.put("orders", "order-18", "refused", before))
                .isInstanceOf(LimitExceededException.class).hasMessageContaining(data.resolve("store").toString());
        assertThat(new String(store.get("orders", "order-17").value(), StandardCharsets.UTF_8))
                .isEqualTo("acknowledged");
        assertThat(server.isAlive()).isTrue();
        assertThat(server.logText()).as("the reserve kept the server's own writes off the full disk")
                .doesNotContain("No space left on device").doesNotContain("Log already failed");

        Files.delete(filler);
        Thread.sleep(500);
        before.close(); // a release needs a commit too
        Grant after = session.lock("orders").acquire(CALL_TIMEOUT);
        assertThat(after.token().value()).isGreaterThan(before.token().value());
        store.put("orders", "order-18", "after", after);
        try (Session again = fencer.openSession(Duration.ofSeconds(10))) {
            assertThat(again.id()).isNotEqualTo(session.id());
        }
        assertThat(server.isAlive()).isTrue();

        server.kill9(); // nothing acknowledged is lost: both writes are on disk
        FencerProcess again = FencerProcess.start("locks-again", dir, List.of("server", "--data", data.toString(),
                "--port", Integer.toString(ports.client()), "--admin-port", Integer.toString(ports.admin()),
                "--raft-port", Integer.toString(ports.raft()), "--http-port", "0"));
        toClose.add(0, again); // closed after the session and clients: closing those with no server spends 30 s
        again.awaitHealthy(ports.admin());
        assertThat(new String(store.get("orders", "order-17").value(), StandardCharsets.UTF_8))
                .isEqualTo("acknowledged");
        assertThat(new String(store.get("orders", "order-18").value(), StandardCharsets.UTF_8)).isEqualTo("after");
    }

    /** Writes {@code file} until the file system refuses more (ENOSPC); returns the bytes written. */
    private static long fill(Path file) throws IOException {
        byte[] chunk = new byte[64 * 1024];
        long written = 0;
        try (OutputStream out = Files.newOutputStream(file)) {
            while (written < (1L << 30)) {
                out.write(chunk);
                written += chunk.length;
            }
        } catch (IOException full) {
            if (!String.valueOf(full.getMessage()).contains("No space left")) {
                throw full;
            }
        }
        return written;
    }

    /** Returns this process's real user id, from /proc (user.name can be anything, or "?", in a container). */
    private <T extends AutoCloseable> T closing(T closeable) {
        toClose.add(closeable);
        return closeable;
    }
}
