package io.fencer.cli;

import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.LockStatus;
import io.fencer.core.FencingToken;
import io.fencer.store.StoreBackupFile;
import io.fencer.store.StoreRestore;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code fencer store restore FILE --data DIR (--fence-generation G | --fence-from HOST:PORT)}: a store's data
 * directory rebuilt from a backup, every scope's accepted token raised to a floor from the lock service.
 */
@Command(name = "restore", mixinStandardHelpOptions = true,
        description = {"Restores a fenced store's empty data directory from a backup file of fencer store backup, "
                + "then start a store on it (fencer store-server --data DIR).",
            "The backup cannot know the tokens the lost store accepted after it was taken, so exactly one fence "
                    + "option is required; each scope's accepted token becomes the larger of its own and the floor:",
            "  --fence-generation G  floor G x 2^48 for every scope: use it when the lock group was restored "
                    + "into generation G too (fencer status shows it); every older token is refused.",
            "  --fence-from HOST:PORT  floor from the live lock group: the token of the bound lock's current "
                    + "holder (who keeps writing), or, for a free lock, one above its latest grant; every holder "
                    + "superseded before the restore is refused.",
            "Refuses a damaged file, a file that is not a store backup (a lock group's backup is restored with "
                    + "fencer restore), and a data directory that is not empty; nothing is written then."})
final class StoreRestoreCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "FILE", description = "The backup file of fencer store backup.")
    Path file;

    @Option(names = "--data", required = true, paramLabel = "DIR",
            description = "The restored store's data directory: absent or empty.")
    Path dataDir;

    @Option(names = "--fence-generation", paramLabel = "G",
            description = "Raise every scope's accepted token to at least G x 2^48: the lock group's generation "
                    + "after its own restore. G must be above the generation of every token the backup accepted.")
    Integer fenceGeneration;

    @Option(names = "--fence-from", split = ",", paramLabel = "HOST:PORT", converter = Converters.Endpoint.class,
            description = "The live lock group's peers, comma-separated: each scope's floor is its bound lock's "
                    + "current holder's token, or one above the lock's latest grant when it is free (Describe, "
                    + "which needs read on the lock under ACLs).")
    List<String> fenceFrom;

    @Mixin
    ClientTlsOptions tls;

    @Mixin
    TimeoutOptions timeouts;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws IOException {
        if ((fenceGeneration == null) == (fenceFrom == null || fenceFrom.isEmpty())) {
            throw new ParameterException(spec.commandLine(), "store restore needs exactly one fence option, "
                    + "--fence-generation G or --fence-from HOST:PORT: a restore without a fence would accept again "
                    + "the tokens of holders superseded after the backup was taken");
        }
        StoreRestore.checkTarget(dataDir);
        StoreBackupFile.Summary backup = StoreBackupFile.verify(file);
        StoreRestore.FenceFloor floor;
        String fence;
        if (fenceGeneration != null) {
            floor = generationFloor(backup);
            fence = "generation " + fenceGeneration + " (floor " + FencingToken.generationBase(fenceGeneration) + ")";
        } else {
            Map<String, Long> floors = floorsFromLockService(backup);
            floor = scope -> floors.get(scope.lock());
            fence = "the lock group at " + String.join(",", fenceFrom) + " (" + floors.size() + " locks read)";
            warnAboveFloor(backup, floors);
        }
        StoreRestore.Result result = StoreRestore.restore(file, dataDir, floor);
        PrintWriter stdout = spec.commandLine().getOut();
        stdout.println("fencer store restore wrote " + dataDir + " from " + file + ": " + backup.scopes().size()
                + " scopes (" + result.scopesRaised() + " accepted tokens raised), " + backup.dataRecords()
                + " keys, " + backup.idempotencyRecords() + " idempotency records; fenced by " + fence);
        stdout.println("start the store on it: fencer store-server --data " + dataDir);
        stdout.flush();
        return Main.EXIT_OK;
    }

    /** The floor of --fence-generation, refused when it would not be above every token the backup accepted. */
    private StoreRestore.FenceFloor generationFloor(StoreBackupFile.Summary backup) {
        int highest = 0;
        for (StoreBackupFile.ScopeFence scope : backup.scopes()) {
            highest = Math.max(highest, FencingToken.generationOf(scope.accepted()));
        }
        if (fenceGeneration <= highest || fenceGeneration > FencingToken.GENERATION_MAX) {
            throw new ParameterException(spec.commandLine(), "--fence-generation " + fenceGeneration + ": it must be"
                    + " above generation " + highest + ", the highest of the tokens the backup accepted, and at most "
                    + FencingToken.GENERATION_MAX + " (the lock group's generation after its restore: fencer status)");
        }
        return StoreRestore.FenceFloor.generation(fenceGeneration);
    }

    /**
     * Reads each bound lock's floor from the live group, before anything is written. A current holder's token is
     * the floor, so that holder keeps writing (a STRICT scope refuses it too: it cannot tell whether that grant
     * already wrote after the backup); a free lock's floor is one above its latest grant, which every later grant
     * reaches. Every token superseded by the time of the read is below the floor.
     */
    private Map<String, Long> floorsFromLockService(StoreBackupFile.Summary backup) {
        return floorsFromLockService(backup, fenceFrom, tls, timeouts, spec);
    }

    /** The floors of {@code backup}'s bound locks read from the group at {@code fenceFrom}; shared with import. */
    static Map<String, Long> floorsFromLockService(StoreBackupFile.Summary backup, List<String> fenceFrom,
            ClientTlsOptions tls, TimeoutOptions timeouts, CommandSpec spec) {
        if (fenceFrom.size() > ClientOptions.ENDPOINTS_MAX) {
            throw new ParameterException(spec.commandLine(), "--fence-from names " + fenceFrom.size()
                    + " endpoints, more than the " + ClientOptions.ENDPOINTS_MAX + " allowed");
        }
        Map<String, Long> floors = new HashMap<>();
        try (FencerClient locks = timeouts.apply(tls.apply(Fencer.newBuilder()
                .endpoints(fenceFrom.toArray(String[]::new)))).build()) {
            for (StoreBackupFile.ScopeFence scope : backup.scopes()) {
                if (!floors.containsKey(scope.lock())) {
                    floors.put(scope.lock(), floor(locks.describe(scope.lock())));
                }
            }
        }
        return floors;
    }

    /** Returns the floor of a lock as the group describes it now. */
    static long floor(LockStatus lock) {
        if (lock.holder() != null) {
            return lock.holder().value();
        }
        if (!lock.sharedHolders().isEmpty()) {
            return lock.sharedHolders().stream().mapToLong(FencingToken::value).min().orElseThrow();
        }
        return lock.lastToken() + 1;
    }

    /** Warns of scopes that accepted tokens above their lock's floor: the group named may not have granted them. */
    private void warnAboveFloor(StoreBackupFile.Summary backup, Map<String, Long> floors) {
        long above = backup.scopes().stream().filter(scope -> scope.accepted() > floors.get(scope.lock())).count();
        if (above > 0) {
            PrintWriter err = spec.commandLine().getErr();
            err.println("fencer: warning: " + above + " scopes accepted tokens above what the lock group at "
                    + String.join(",", fenceFrom) + " reports for their locks; they keep their own accepted token"
                    + " (never lowered), and refuse that group's holders until it grants above it: is this the group"
                    + " that granted them?");
            err.flush();
        }
    }
}
