package io.fencer.cli;

import io.fencer.client.FencerClient;
import io.fencer.lock.BackupFile;
import io.fencer.lock.Limits;
import io.fencer.lock.LockStateMachine;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code fencer backup --out FILE}: a consistent copy of the running group's lock state, checked as it arrives and
 * written atomically, for {@code fencer restore}.
 */
@Command(name = "backup", mixinStandardHelpOptions = true,
        description = {"Copies the running group's lock state into FILE, for fencer restore.",
            "Needs the admin permission under ACLs. The file is checked (checksum, state) before it is kept, and "
                    + "written whole or not at all."})
final class BackupCommand implements Callable<Integer> {
    @Option(names = "--out", required = true, paramLabel = "FILE",
            description = "The backup file to write; an existing file is replaced only when the new one is whole.")
    Path out;

    @Mixin
    ClientOptions client;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws IOException {
        byte[] file;
        try (FencerClient fencer = client.connect()) {
            file = fencer.backup();
        }
        BackupFile.Contents contents = BackupFile.read(file, BackupFile.Kind.BACKUP, "the backup received",
                Limits.DEFAULT);
        LockStateMachine state = contents.machine(Limits.DEFAULT);
        WholeFile.write(out, channel -> WholeFile.writeAll(channel, file), written -> null);
        PrintWriter stdout = spec.commandLine().getOut();
        stdout.println("fencer backup wrote " + out + ": " + file.length + " bytes, group " + contents.sourceGroup()
                + " at log index " + contents.appliedIndex() + ", generation " + state.generation()
                + ", highest token " + state.highestToken() + ", " + state.sessionCount() + " sessions, "
                + state.lockCount() + " locks");
        stdout.flush();
        return Main.EXIT_OK;
    }
}
