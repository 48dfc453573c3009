package io.fencer.cli;

import io.fencer.client.FencedStore;
import io.fencer.client.Fencer;
import io.fencer.store.StoreBackupFile;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintWriter;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code fencer store backup --out FILE}: a consistent copy of a running store, streamed into a temporary file
 * beside FILE, synced, checked whole, and only then renamed into place.
 */
@Command(name = "backup", mixinStandardHelpOptions = true,
        description = {"Copies every scope (lock, policy, accepted token), key and idempotency record of a running "
                + "fenced store into FILE, for fencer store restore.",
            "The copy is one snapshot of the store, taken while writes go on. Needs the admin permission on every "
                    + "scope under ACLs. The file is checked (checksum, every record) before it is kept, and "
                    + "written whole or not at all."})
final class StoreBackupCommand implements Callable<Integer> {
    /** The longest --backup-timeout. */
    static final Duration BACKUP_TIMEOUT_MAX = Duration.ofDays(1);

    @Option(names = "--out", required = true, paramLabel = "FILE",
            description = "The backup file to write; an existing file is replaced only when the new one is whole.")
    Path out;

    @Option(names = "--store", paramLabel = "HOST:PORT", defaultValue = "${env:FENCER_STORE:-127.0.0.1:7070}",
            converter = Converters.Endpoint.class,
            description = "The store's address: a store-server, or a server hosting the store (env FENCER_STORE; "
                    + "default: ${DEFAULT-VALUE}).")
    String store;

    @Option(names = "--backup-timeout", paramLabel = "DURATION", defaultValue = "1h",
            converter = Durations.Converter.class,
            description = "How long the whole copy may take (default: ${DEFAULT-VALUE}, at most 1d).")
    Duration backupTimeout;

    @Mixin
    ClientTlsOptions tls;

    @Mixin
    TimeoutOptions timeouts;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws IOException {
        if (backupTimeout.isZero() || backupTimeout.compareTo(BACKUP_TIMEOUT_MAX) > 0) {
            throw new ParameterException(spec.commandLine(), "--backup-timeout " + Durations.format(backupTimeout)
                    + " is outside (0s, " + Durations.format(BACKUP_TIMEOUT_MAX) + "]");
        }
        StoreBackupFile.Summary summary = WholeFile.write(out, this::copy, StoreBackupFile::verify);
        PrintWriter stdout = spec.commandLine().getOut();
        stdout.println("fencer store backup wrote " + out + ": " + summary.fileBytes() + " bytes, "
                + summary.scopes().size() + " scopes, " + summary.dataRecords() + " keys, "
                + summary.idempotencyRecords() + " idempotency records, snapshot at sequence " + summary.sequence()
                + " taken " + Instant.ofEpochMilli(summary.createdAtMillis()));
        stdout.flush();
        return Main.EXIT_OK;
    }

    /** Streams the store's backup into the temporary file's channel. */
    private void copy(FileChannel channel) throws IOException {
        try (FencedStore client = timeouts.apply(tls.apply(Fencer.newStoreBuilder().endpoint(store))).build()) {
            OutputStream file = new BufferedOutputStream(Channels.newOutputStream(channel), 1 << 16);
            client.backup(file, backupTimeout);
            file.flush();
        }
    }
}
