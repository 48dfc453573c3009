package io.fencer.cli;

import io.fencer.api.v1.ImportScopesRequest;
import io.fencer.api.v1.ImportScopesResponse;
import io.fencer.api.v1.ImportedScopeOutcome;
import io.fencer.client.FencedStore;
import io.fencer.core.FencePolicy;
import io.fencer.server.store.ReplicatedStore;
import io.fencer.store.ImportedScope;
import io.fencer.store.StoreBackup;
import io.fencer.store.StoreBackupFile;
import io.fencer.store.StoreEngine;
import io.fencer.store.StoreOptions;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code fencer store import (FILE | --from-dir DIR) --server PEERS}: a single-node store's scopes moved into the
 * replicated store of a group, each whole with its accepted token, in requests of whole scopes that fit one log entry.
 */
@Command(name = "import", mixinStandardHelpOptions = true,
        description = {"Imports every scope of a single-node fenced store (its binding, policy, accepted token, "
                + "revision and keys) into a running store, usually the replicated store of a group of peers.",
            "Reads a backup file of fencer store backup, or the data directory of a stopped single-node store "
                    + "(--from-dir; a group's peer refuses to start while its DIR/store holds one: move it away "
                    + "first). A scope the store does not hold is created as given; one it holds identically (a "
                    + "rerun) is skipped; one it holds differently is refused, named, and nothing of it written. "
                    + "Accepted tokens are never lowered.",
            "A scope whose keys and values exceed one log entry (" + ReplicatedStore.IMPORT_REQUEST_BYTES_MAX
                    + " bytes encoded) is refused with its size. Idempotency records are not imported. Needs the "
                    + "admin permission on every scope under ACLs. Exit 0 when every scope was imported or skipped, "
                    + "1 otherwise."})
final class StoreImportCommand implements Callable<Integer> {
    /** The most scopes sent in one request (store.proto). */
    static final int REQUEST_SCOPES_MAX = 1_000;

    /** Where the scopes come from: exactly one. */
    static final class Source {
        @picocli.CommandLine.Parameters(index = "0", paramLabel = "FILE",
                description = "A backup file of fencer store backup.")
        Path file;

        @Option(names = "--from-dir", paramLabel = "DIR",
                description = "The data directory of a stopped single-node store (a store-server's --data, or a "
                        + "server's DIR/store moved away); its data is not changed.")
        Path directory;
    }

    @ArgGroup(exclusive = true, multiplicity = "1")
    Source source;

    @Option(names = "--server", split = ",", required = true, paramLabel = "HOST:PORT",
            converter = Converters.Endpoint.class,
            description = "The store to import into: the group's peers, comma-separated (the leader answers).")
    List<String> server;

    @Option(names = "--fence-from", split = ",", paramLabel = "HOST:PORT", converter = Converters.Endpoint.class,
            description = "Raise each scope's accepted token to a floor from this live lock group, as fencer store "
                    + "restore does: for a backup taken while the old store still took writes. Not needed for a "
                    + "stopped store's directory or a backup taken after its last write.")
    List<String> fenceFrom;

    @Mixin
    ClientTlsOptions tls;

    @Mixin
    TimeoutOptions timeouts;

    @Spec
    CommandSpec spec;

    /** The counts of the outcomes, by kind. */
    private final Map<String, Integer> counts = new HashMap<>();

    @Override
    public Integer call() throws IOException {
        if (server.size() > ClientOptions.ENDPOINTS_MAX) {
            throw new ParameterException(spec.commandLine(), "--server names " + server.size()
                    + " endpoints, more than the " + ClientOptions.ENDPOINTS_MAX + " allowed");
        }
        if (source.directory != null) {
            Path copy = backupOfDirectory(source.directory);
            try {
                return importFile(copy, source.directory.toString());
            } finally {
                Files.deleteIfExists(copy);
                Files.deleteIfExists(copy.getParent());
            }
        }
        return importFile(source.file, source.file.toString());
    }

    private int importFile(Path file, String name) throws IOException {
        StoreBackupFile.Summary summary = StoreBackupFile.verify(file);
        Map<String, Long> floors = fenceFrom == null || fenceFrom.isEmpty() ? Map.of() : floors(summary);
        PrintWriter out = spec.commandLine().getOut();
        try (FencedStore store = timeouts.apply(tls.apply(
                io.fencer.client.Fencer.newStoreBuilder().endpoint(String.join(",", server)))).build()) {
            Batch batch = new Batch(store, out);
            StoreBackupFile.readScopes(file, ReplicatedStore.IMPORT_REQUEST_BYTES_MAX, (scope, keyBytes, whole) -> {
                if (!whole) {
                    report(out, scope.scope(), "REFUSED", "its keys and values are " + keyBytes + " bytes, more than"
                            + " the " + ReplicatedStore.IMPORT_REQUEST_BYTES_MAX + " one import request (one log"
                            + " entry) holds");
                    return;
                }
                Long floor = floors.get(scope.lock());
                batch.add(floor == null || floor <= scope.accepted() ? scope : scope.withAccepted(floor));
            });
            batch.send();
        }
        int imported = counts.getOrDefault("IMPORTED", 0);
        int skipped = counts.getOrDefault("SKIPPED", 0);
        int failed = summary.scopes().size() - imported - skipped;
        out.println("fencer store import read " + name + ": " + summary.scopes().size() + " scopes, "
                + summary.dataRecords() + " keys; " + imported + " imported, " + skipped + " skipped (held already), "
                + failed + " refused" + (summary.idempotencyRecords() > 0 ? "; " + summary.idempotencyRecords()
                + " idempotency records not imported" : ""));
        out.flush();
        return failed == 0 ? Main.EXIT_OK : Main.EXIT_ERROR;
    }

    /** Scopes gathered into requests of at most {@link #REQUEST_SCOPES_MAX} and the entry's bytes. */
    private final class Batch {
        private final FencedStore store;
        private final PrintWriter out;
        private ImportScopesRequest.Builder request = ImportScopesRequest.newBuilder();
        /** The encoded size of {@link #request}, kept as scopes are added (building it each time costs a copy). */
        private int requestBytes;

        Batch(FencedStore store, PrintWriter out) {
            this.store = store;
            this.out = out;
        }

        void add(ImportedScope scope) {
            io.fencer.api.v1.ImportedScope wire = wire(scope);
            int alone = com.google.protobuf.CodedOutputStream.computeMessageSize(
                    ImportScopesRequest.SCOPES_FIELD_NUMBER, wire);
            if (alone > ReplicatedStore.IMPORT_REQUEST_BYTES_MAX) {
                report(out, scope.scope(), "REFUSED", "it is " + alone + " bytes encoded, more than the "
                        + ReplicatedStore.IMPORT_REQUEST_BYTES_MAX + " one import request (one log entry) holds");
                return;
            }
            if (request.getScopesCount() >= REQUEST_SCOPES_MAX
                    || requestBytes + alone > ReplicatedStore.IMPORT_REQUEST_BYTES_MAX) {
                send();
            }
            request.addScopes(wire);
            requestBytes += alone;
        }

        void send() {
            if (request.getScopesCount() == 0) {
                return;
            }
            ImportScopesResponse response;
            try {
                response = ImportScopesResponse.parseFrom(store.importScopes(request.build().toByteArray()));
            } catch (com.google.protobuf.InvalidProtocolBufferException e) {
                throw new IllegalStateException("the server's import answer does not decode: " + e.getMessage(), e);
            }
            for (ImportedScopeOutcome outcome : response.getOutcomesList()) {
                report(out, outcome.getScope(), outcome.getKind().name(), outcome.getDetail());
            }
            request = ImportScopesRequest.newBuilder();
            requestBytes = 0;
        }
    }

    private void report(PrintWriter out, String scope, String kind, String detail) {
        counts.merge(kind, 1, Integer::sum);
        out.println(kind.toLowerCase(java.util.Locale.ROOT) + " " + scope + (detail.isEmpty() ? "" : ": " + detail));
        out.flush();
    }

    private static io.fencer.api.v1.ImportedScope wire(ImportedScope scope) {
        io.fencer.api.v1.ImportedScope.Builder wire = io.fencer.api.v1.ImportedScope.newBuilder()
                .setScope(scope.scope()).setLock(scope.lock()).setAccepted(scope.accepted())
                .setRevision(scope.revision()).setPolicy(scope.policy() == FencePolicy.STRICT
                        ? io.fencer.api.v1.Policy.POLICY_STRICT : io.fencer.api.v1.Policy.POLICY_AT_LEAST);
        for (ImportedScope.Key key : scope.keys()) {
            wire.addKeys(io.fencer.api.v1.ImportedKey.newBuilder()
                    .setKey(com.google.protobuf.ByteString.copyFrom(key.key()))
                    .setValue(com.google.protobuf.ByteString.copyFrom(key.value())).setWrittenBy(key.writtenBy()));
        }
        return wire.build();
    }

    /** Each bound lock's floor from --fence-from, as fencer store restore reads it. */
    private Map<String, Long> floors(StoreBackupFile.Summary summary) {
        return StoreRestoreCommand.floorsFromLockService(summary, fenceFrom, tls, timeouts, spec);
    }

    /**
     * Copies the stopped store in {@code directory} into a backup file in a new temporary directory, through the
     * store's own backup: opening it fails while a server holds it (RocksDB's lock), so a running store is not read.
     */
    private Path backupOfDirectory(Path directory) throws IOException {
        if (!Files.isDirectory(directory, LinkOption.NOFOLLOW_LINKS)
                || !Files.exists(directory.resolve("CURRENT"))) {
            throw new ParameterException(spec.commandLine(), "--from-dir " + directory + " is not the data"
                    + " directory of a store (no RocksDB CURRENT file in it)");
        }
        Path temporary = Files.createTempDirectory("fencer-store-import");
        Path file = temporary.resolve("store.fencerbk");
        try (StoreEngine engine = StoreEngine.open(directory, StoreOptions.defaults());
             StoreBackup backup = engine.openBackup(System.currentTimeMillis());
             OutputStream out = Files.newOutputStream(file)) {
            for (byte[] piece = backup.next(1 << 20); piece != null; piece = backup.next(1 << 20)) {
                out.write(piece);
            }
        } catch (IOException | RuntimeException e) {
            Files.deleteIfExists(file);
            Files.deleteIfExists(temporary);
            throw e;
        }
        return file;
    }
}
