package io.fencer.cli;

import io.fencer.core.FencingToken;
import io.fencer.lock.BackupFile;
import io.fencer.lock.Limits;
import io.fencer.lock.LockStateMachine;
import io.fencer.server.raft.RestoreSeed;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code fencer restore FILE --data DIR}: seeds a new peer's data directory from a backup. Run it with the same file
 * and generation for every peer of the new group, then start each with {@code fencer server --data DIR}.
 */
@Command(name = "restore", mixinStandardHelpOptions = true,
        description = {"Seeds a new peer's empty data directory from a backup file of fencer backup.",
            "Run it for every peer of the new group with the same FILE and generation, then start each peer "
                    + "with fencer server on its directory. The restored group grants every token in a later "
                    + "generation than the backup's, so above every token the lost group ever granted; it knows "
                    + "no session: every lock is free and clients open new sessions."})
final class RestoreCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "FILE", description = "The backup file.")
    Path file;

    @Option(names = "--data", required = true, paramLabel = "DIR",
            description = "The new peer's data directory: empty, or holding only a group secret file.")
    Path dataDir;

    @Option(names = "--generation", paramLabel = "N",
            description = {"The restored group's token generation (default: one above the backup's). Restoring the "
                    + "same backup twice needs a generation above every generation a restored group ran in: "
                    + "fencer status shows it."})
    Integer generation;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws IOException {
        long size = Files.size(file);
        if (size > BackupFile.FILE_BYTES_MAX) {
            throw new IOException(file + " has " + size + " bytes, more than a backup's " + BackupFile.FILE_BYTES_MAX);
        }
        BackupFile.Contents backup = BackupFile.read(Files.readAllBytes(file), BackupFile.Kind.BACKUP,
                file.toString(), Limits.DEFAULT);
        LockStateMachine state = backup.machine(Limits.DEFAULT);
        int backedUp = Math.max(state.generation(), FencingToken.generationOf(state.highestToken()));
        int chosen = generation == null ? backedUp + 1 : generation;
        if (chosen <= backedUp || chosen > FencingToken.GENERATION_MAX) {
            throw new picocli.CommandLine.ParameterException(spec.commandLine(), "--generation " + chosen
                    + ": it must be above the backup's generation " + backedUp + " and at most "
                    + FencingToken.GENERATION_MAX);
        }
        BackupFile.Contents seed = RestoreSeed.write(dataDir, backup, chosen, Limits.DEFAULT,
                System.currentTimeMillis());
        PrintWriter stdout = spec.commandLine().getOut();
        stdout.println("fencer restore seeded " + dataDir + " from " + file + " (group " + backup.sourceGroup()
                + " at log index " + backup.appliedIndex() + ", highest token " + state.highestToken()
                + "): generation " + chosen + ", first token " + (FencingToken.generationBase(chosen) + 1) + ", restored group "
                + RestoreSeed.groupName(seed));
        stdout.println("seed every peer of the new group with this file and --generation " + chosen
                + ", then start each with fencer server --data DIR");
        stdout.flush();
        return Main.EXIT_OK;
    }
}
