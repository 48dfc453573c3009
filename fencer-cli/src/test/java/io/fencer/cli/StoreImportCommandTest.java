package io.fencer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.core.FencingToken;
import io.fencer.server.store.ReplicatedStore;
import io.fencer.store.Op;
import io.fencer.store.StoreEngine;
import io.fencer.store.StoreOptions;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import io.fencer.testing.FencerTestCluster;
import io.fencer.testing.FencerTestServer;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code fencer store import} in process: a single server's store, backed up with {@code fencer store backup}, moves
 * into the replicated store of three peers in this JVM with its values and accepted tokens; a rerun, from the file or
 * from the stopped server's data directory, skips every scope.
 */
class StoreImportCommandTest {
    @TempDir
    Path dataRoot;

    @Test
    void import_ofASingleServersBackupIntoThreePeers_keepsValuesAndFencesAndARerunSkips() {
        Path single = dataRoot.resolve("single");
        Path file = dataRoot.resolve("orders.fencerbk");
        try (FencerTestServer server = FencerTestServer.start(single)) {
            String endpoint = server.endpoint();
            assertOk(CommandRun.run("kv", "put", "orders", "total", "42", "--token", sequencer("orders", 5),
                    "--store", endpoint));
            assertOk(CommandRun.run("kv", "put", "orders", "count", "3", "--token", sequencer("orders", 7),
                    "--store", endpoint));
            assertOk(CommandRun.run("kv", "put", "stock", "apples", "10", "--token", sequencer("stock", 2),
                    "--store", endpoint));
            assertOk(CommandRun.run("store", "backup", "--out", file.toString(), "--store", endpoint));
        }
        try (FencerTestCluster group = FencerTestCluster.start(dataRoot.resolve("group"), 3)) {
            String peers = group.endpoints();

            CommandRun imported = CommandRun.run("store", "import", file.toString(), "--server", peers);
            CommandRun total = CommandRun.run("kv", "get", "orders", "total", "--store", peers);
            CommandRun stale = CommandRun.run("kv", "put", "orders", "total", "0", "--token", sequencer("orders", 6),
                    "--store", peers);
            CommandRun rerun = CommandRun.run("store", "import", file.toString(), "--server", peers);
            CommandRun fromDir = CommandRun.run("store", "import", "--from-dir", single.resolve("store").toString(),
                    "--server", peers);

            assertOk(imported);
            assertThat(imported.out()).contains("imported orders", "imported stock",
                    "2 scopes, 3 keys; 2 imported, 0 skipped (held already), 0 refused");
            assertThat(total.out()).isEqualTo("42\n");
            assertThat(stale.exitCode()).isEqualTo(Main.EXIT_STALE);
            assertOk(rerun);
            assertThat(rerun.out()).contains("skipped orders", "0 imported, 2 skipped");
            assertOk(fromDir);
            assertThat(fromDir.out()).contains("0 imported, 2 skipped");
        }
    }

    @Test
    void import_ofMoreScopesThanOneRequestHoldsAndOfAScopeOverOneEntry_sendsThemAllAndRefusesTheBigOneBySize()
            throws Exception {
        Path source = dataRoot.resolve("source");
        try (StoreEngine engine = StoreEngine.open(source, StoreOptions.defaults())) {
            List<CompletableFuture<?>> writes = new ArrayList<>();
            for (int i = 0; i < StoreImportCommand.REQUEST_SCOPES_MAX + 1; i++) {
                writes.add(engine.writeAsync("s" + i, sequencer("s" + i, 1),
                        List.of(Op.put(bytes("k"), bytes("v" + i))), null));
            }
            writes.add(engine.writeAsync("big", sequencer("big", 1), List.of(Op.put(bytes("a"), new byte[600_000]),
                    Op.put(bytes("b"), new byte[600_000])), null));
            writes.forEach(CompletableFuture::join);
        }
        try (FencerTestServer target = FencerTestServer.start(dataRoot.resolve("target"))) {
            CommandRun imported = CommandRun.run("store", "import", "--from-dir", source.toString(), "--server",
                    target.endpoint());
            CommandRun last = CommandRun.run("kv", "get", "s1000", "k", "--store", target.endpoint());

            assertThat(imported.exitCode()).as(imported.err()).isEqualTo(Main.EXIT_ERROR);
            assertThat(imported.out()).contains("1002 scopes, 1003 keys; 1001 imported, 0 skipped (held already), 1"
                    + " refused").contains("refused big: its keys and values are 1200002 bytes, more than the "
                    + ReplicatedStore.IMPORT_REQUEST_BYTES_MAX);
            assertThat(last.out()).isEqualTo("v1000\n");
        }
    }

    @Test
    void import_withoutASourceOrWithTwo_isAUsageError() {
        CommandRun none = CommandRun.run("store", "import", "--server", "127.0.0.1:1");
        CommandRun both = CommandRun.run("store", "import", "x.fencerbk", "--from-dir", "d", "--server",
                "127.0.0.1:1");

        assertThat(none.exitCode()).isEqualTo(Main.EXIT_USAGE);
        assertThat(both.exitCode()).isEqualTo(Main.EXIT_USAGE);
        assertThat(both.err()).contains("mutually exclusive");
    }

    private static void assertOk(CommandRun run) {
        assertThat(run.exitCode()).as(run.out() + run.err()).isZero();
    }

    private static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    private static String sequencer(String lock, long value) {
        return new FencingToken(lock, value).sequencer();
    }
}
