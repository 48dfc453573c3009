package io.fencer.server;

import static io.fencer.server.TestServers.failure;
import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.api.v1.BeginUnitRequest;
import io.fencer.api.v1.CommitUnitRequest;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.Reason;
import io.fencer.api.v1.StoreGrpc;
import io.fencer.api.v1.UnitWriteRequest;
import io.fencer.core.FencingToken;
import io.fencer.core.ManualTicker;
import io.fencer.core.Sequencer;
import io.fencer.server.StoreServiceTest.StoreTesting;
import io.fencer.server.rpc.TestIdentities;
import io.fencer.store.StoreOptions;
import io.grpc.ManagedChannel;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A single node's store on a small file system that fills up: units are store writes (a begin raises the accepted
 * token durably, a commit writes its ops), so they must be refused at the data directory's reserve as writes are,
 * before RocksDB fails for space and turns the database read-only. Mounts a 48 MiB tmpfs, so it needs root; elsewhere
 * it is skipped, and as root a mount that fails fails it.
 */
class StoreUnitDiskReserveTest {
    private static final long LEFT_FREE_BYTES = 2L << 20; // under the 4.8 MiB reserve of a 48 MiB file system

    private final ManualTicker ticker = new ManualTicker();
    @TempDir
    Path dir;
    private Path mount;
    private FencerStoreServer server;
    private ManagedChannel channel;

    @BeforeEach
    void start() throws Exception {
        mount = Files.createDirectories(dir.resolve("small"));
        String failure = run("mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", mount.toString());
        if (failure != null) {
            mount = null;
            // Only a machine where the test may not mount skips it: CI runs as root, where a failure fails it.
            assertThat(Files.getAttribute(Path.of("/proc/self"), "unix:uid"))
                    .as("running as root, yet mounting a tmpfs failed: %s", failure).isNotEqualTo(0);
            Assumptions.abort("needs root to mount a small tmpfs: " + failure);
        }
        server = FencerStoreServer.start(StoreServerConfig.defaults(mount.resolve("data")).withPorts(0, 0)
                .withStore(StoreOptions.defaults().withTicker(ticker)), TestIdentities.fromHeader());
        channel = TestServers.channel(server.port());
    }

    @AfterEach
    void stop() throws Exception {
        if (channel != null) {
            TestServers.close(channel);
        }
        if (server != null) {
            server.close();
        }
        if (mount != null) {
            run("umount", "-l", mount.toString());
        }
    }

    @Test
    void unitCalls_dataDirectoryUnderItsReserve_refusedAsWritesAre() throws Exception {
        String seq = Sequencer.format(new FencingToken("jobs/a", 3));
        String unit = stub().beginUnit(BeginUnitRequest.newBuilder().setScope("jobs/a").setSequencer(seq)
                .setTimeoutMillis(30_000).build()).getUnitId();
        stub().unitWrite(UnitWriteRequest.newBuilder().setUnitId(unit)
                .addOps(StoreTesting.putOp("k", new byte[] {1})).build());
        fill(mount.resolve("filler"));
        ticker.advance(Duration.ofSeconds(1)); // past the reserve's last reading of the free space (kept 200 ms)

        String other = Sequencer.format(new FencingToken("jobs/b", 3));
        ErrorDetail write = failure(() -> stub().write(StoreTesting.put("jobs/b", other, "k", "v")));
        ErrorDetail begin = failure(() -> stub().beginUnit(BeginUnitRequest.newBuilder().setScope("jobs/b")
                .setSequencer(other).setTimeoutMillis(30_000).build()));
        ErrorDetail commit = failure(() -> stub().commitUnit(CommitUnitRequest.newBuilder().setUnitId(unit)
                .build()));

        assertThat(write.getLimit()).as("the control: a write is refused").isEqualTo("diskReserveBytes");
        assertThat(begin.getReason()).isEqualTo(Reason.REASON_LIMIT_EXCEEDED);
        assertThat(begin.getLimit()).isEqualTo("diskReserveBytes");
        assertThat(commit.getReason()).isEqualTo(Reason.REASON_LIMIT_EXCEEDED);
        assertThat(commit.getLimit()).isEqualTo("diskReserveBytes");
    }

    private StoreGrpc.StoreBlockingStub stub() {
        return StoreTesting.stub(channel);
    }

    /** Fills the file system until {@link #LEFT_FREE_BYTES} are left. */
    private static void fill(Path file) throws Exception {
        long toWrite = Files.getFileStore(file.getParent()).getUsableSpace() - LEFT_FREE_BYTES;
        byte[] chunk = new byte[1 << 20];
        try (OutputStream out = Files.newOutputStream(file)) {
            for (long written = 0; written < toWrite; written += chunk.length) {
                out.write(chunk, 0, (int) Math.min(chunk.length, toWrite - written));
            }
        }
    }

    /** Runs a command; returns null when it succeeded, else what it printed. */
    private static String run(String... command) throws Exception {
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            return String.join(" ", command) + " did not finish in 30 s";
        }
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        return process.exitValue() == 0 ? null : String.join(" ", command) + ": exit " + process.exitValue() + ": "
                + output;
    }
}
