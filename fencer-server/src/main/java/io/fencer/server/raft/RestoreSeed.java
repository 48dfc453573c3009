package io.fencer.server.raft;

import io.fencer.lock.BackupFile;
import io.fencer.lock.Limits;
import io.fencer.lock.LockStateMachine;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;
import java.util.stream.Stream;
import org.apache.ratis.protocol.RaftGroupId;

/**
 * The seed of a restored peer: {@code dataDir/}{@value #FILE_NAME}, written by {@code fencer restore} from a backup
 * and read when the peer starts. The one place the seed's file is placed and the restored group's id derived.
 *
 * <p>Every peer of a restored group starts from the same seed: its state machine starts from the seed's state
 * instead of an empty one (until it has a snapshot of its own, which includes the seed), and its Raft group id is
 * derived from the seed's digest. So a peer restored from another backup or with another generation, or not restored
 * at all, is of another group: Ratis refuses its messages, and no group can mix a restored state with an empty one.
 */
public final class RestoreSeed {
    /** The seed's file name in a data directory. */
    public static final String FILE_NAME = "restore.seed";

    private RestoreSeed() {}

    /** Returns the seed of {@code dataDir}, or null when the peer was not restored. */
    static BackupFile.Contents read(Path dataDir, Limits limits) throws IOException {
        checkFinished(dataDir);
        Path file = dataDir.resolve(FILE_NAME);
        if (!Files.exists(file, LinkOption.NOFOLLOW_LINKS)) {
            return null;
        }
        return BackupFile.read(Files.readAllBytes(file), BackupFile.Kind.SEED, file.toString(), limits);
    }

    /**
     * Refuses a data directory into which a restore did not finish: its seed was being written (a crash, a full disk)
     * and never put in place. Started there, a peer would found a new group that counts tokens from 1 again, the very
     * thing a restore is for. The server checks this before it writes anything into the directory, so that the
     * restore can be run again there.
     *
     * @throws IOException naming the partial seed and what to do; nothing was changed
     */
    public static void checkFinished(Path dataDir) throws IOException {
        Path file = dataDir.resolve(FILE_NAME);
        Path partial = SnapshotFiles.temporaryOf(file);
        if (!Files.exists(file, LinkOption.NOFOLLOW_LINKS) && Files.exists(partial, LinkOption.NOFOLLOW_LINKS)) {
            throw new IOException("data directory " + dataDir + " holds " + partial.getFileName() + ", the seed of"
                    + " a `fencer restore` that did not finish, and no seed " + FILE_NAME + ": started, this peer"
                    + " would found a new group counting tokens from 1 again. Run the restore again (it replaces"
                    + " that file); nothing was changed");
        }
    }

    /** Returns the Raft group of a peer restored from {@code seed}, or the one group of Fencer when null. */
    static RaftGroupId groupId(BackupFile.Contents seed) {
        if (seed == null) {
            return RaftNode.GROUP_ID;
        }
        return RaftGroupId.valueOf(UUID.nameUUIDFromBytes(("fencer.v1.locks restored " + seed.stateDigest())
                .getBytes(StandardCharsets.UTF_8)));
    }

    /**
     * Refuses to start a peer whose Raft storage is of another group than {@code groupId}, the one its seed (or the
     * lack of one) names: a restored peer whose seed went missing, or a seed put into another group's data directory.
     * Ratis would otherwise format {@code groupId}'s storage beside the other and fail to start with both, and with
     * that stray storage the peer would not start again even once its own seed was back.
     *
     * @throws IOException naming the groups found, the seed and what to do; nothing was changed
     */
    static void checkStorage(Path dataDir, RaftGroupId groupId, BackupFile.Contents seed) throws IOException {
        Path raft = dataDir.resolve("raft");
        if (!Files.isDirectory(raft)) {
            return;
        }
        List<String> others;
        try (Stream<Path> groups = Files.list(raft)) {
            others = groups.filter(Files::isDirectory).map(group -> group.getFileName().toString())
                    .filter(name -> RaftNode.isGroupDirectoryName(name)
                            && !name.equals(groupId.getUuid().toString()))
                    .sorted().toList();
        }
        if (others.isEmpty()) {
            return;
        }
        Path file = dataDir.resolve(FILE_NAME);
        throw new IOException(raft + " holds the Raft storage of group " + String.join(", ", others) + ", not of group "
                + groupId.getUuid() + " that this peer would start " + (seed == null
                ? "without a restore seed: it is a restored group's data directory whose seed " + file + " is missing;"
                        + " put back the seed it was restored from (starting without it would found a new group,"
                        + " counting tokens from 1 again)"
                : "from its restore seed " + file + ": that seed is not the one this data directory was restored"
                        + " from; put back its own")
                + ". A data directory holds one group's storage; nothing was changed");
    }

    /**
     * Makes {@code dataDir} the data directory of a peer of a group restored from {@code backup}, whose tokens are of
     * {@code generation}; returns the seed written.
     *
     * @param generation the restored group's generation: above the backup's and every token's in it
     * @throws IOException when {@code dataDir} holds a peer's data already (a restore seeds a new peer only); a
     *     partial seed that an unfinished restore left is no peer's data, and is replaced
     * @throws IllegalArgumentException when the generation is not above the backup's
     */
    public static BackupFile.Contents write(Path dataDir, BackupFile.Contents backup, int generation, Limits limits,
            long nowMillis) throws IOException {
        Files.createDirectories(dataDir);
        // A restore that did not finish leaves its partial seed, which the next restore's write replaces.
        String partialSeed = SnapshotFiles.temporaryOf(dataDir.resolve(FILE_NAME)).getFileName().toString();
        try (Stream<Path> entries = Files.list(dataDir)) {
            if (entries.map(entry -> entry.getFileName().toString())
                    .anyMatch(name -> !name.endsWith(".secret") && !name.equals(partialSeed))) {
                throw new IOException("data directory " + dataDir + " is not empty: a restore seeds a new peer's empty"
                        + " data directory (a group secret file may be there), never one that holds a peer's data");
            }
        }
        LockStateMachine restored = backup.machine(limits).restoredInGeneration(generation);
        BackupFile.Contents seed = new BackupFile.Contents(BackupFile.Kind.SEED, nowMillis, backup.sourceGroup(),
                backup.appliedIndex(), BackupFile.stateOf(restored));
        SnapshotFiles.writeAtomically(dataDir.resolve(FILE_NAME), BackupFile.write(seed));
        return seed;
    }

    /** Returns the id of the group a peer restored from {@code seed} belongs to, as operators see it. */
    public static String groupName(BackupFile.Contents seed) {
        return groupId(seed).getUuid().toString();
    }
}
