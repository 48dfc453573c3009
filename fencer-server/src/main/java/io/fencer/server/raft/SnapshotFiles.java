package io.fencer.server.raft;

import io.fencer.lock.Limits;
import io.fencer.lock.LockStateMachine;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutput;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import org.apache.ratis.io.MD5Hash;
import org.apache.ratis.server.protocol.TermIndex;
import org.apache.ratis.server.storage.FileInfo;
import org.apache.ratis.statemachine.impl.SimpleStateMachineStorage;
import org.apache.ratis.statemachine.impl.SingleFileSnapshotInfo;
import org.apache.ratis.util.MD5FileUtil;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The snapshot files of {@link RaftLockStateMachine}: their layout (a header, the lock state, then from version 2 the
 * replicated store's state to the end of the file), how one is written (atomically, with its MD5 beside it, and made
 * Ratis's latest) and how one is read back. The state machine decides what goes in a snapshot and when, under its
 * lock; this class only moves bytes between it and the disk. Also the atomic file write that the restore seed uses.
 */
final class SnapshotFiles {
    /** The state machine's logger: operators filter snapshot lines by it, as before these steps had a class. */
    private static final Logger LOG = LoggerFactory.getLogger(RaftLockStateMachine.class);
    /** "FNCR": the first bytes of every snapshot file. */
    private static final int SNAPSHOT_MAGIC = 0x464e4352;
    private static final int SNAPSHOT_FORMAT_VERSION = 1;
    /**
     * The snapshot layout with the replicated store: version 1's, then the store's state to the end of the file
     * ({@link ReplicatedResource.SnapshotWriter}). Written only from format level 5 on, which every peer reads.
     */
    private static final int SNAPSHOT_FORMAT_VERSION_STORE = 2;

    private SnapshotFiles() {}

    /** Writes the header of a snapshot with the store's state after the lock state, or without. */
    static void writeHeader(DataOutput out, boolean withStore) throws IOException {
        out.writeInt(SNAPSHOT_MAGIC);
        out.writeInt(withStore ? SNAPSHOT_FORMAT_VERSION_STORE : SNAPSHOT_FORMAT_VERSION);
    }

    /**
     * Writes the snapshot at {@code last}, {@code lockState} (its header and the lock state) followed by what
     * {@code store} writes, unless the file exists already; then saves its MD5 and makes it Ratis's latest snapshot.
     * Closes {@code store}, which may be null (a snapshot without the store).
     */
    static void publish(SimpleStateMachineStorage storage, TermIndex last, ByteArrayOutputStream lockState,
            ReplicatedResource.SnapshotWriter store) throws IOException {
        File file = storage.getSnapshotFile(last.getTerm(), last.getIndex());
        try (ReplicatedResource.SnapshotWriter writer = store) {
            if (!file.exists()) {
                writeAtomically(file.toPath(), out -> {
                    lockState.writeTo(out);
                    if (writer != null) {
                        writer.writeTo(out);
                    }
                });
            }
        }
        MD5Hash md5 = MD5FileUtil.computeAndSaveMd5ForFile(file);
        storage.updateLatestSnapshot(new SingleFileSnapshotInfo(new FileInfo(file.toPath(), md5), last));
        LOG.info("snapshot {} written: {} bytes at {}", last, file.length(), file);
    }

    /** A snapshot read back: its lock state, and whether the file held the store's state. */
    record Loaded(LockStateMachine machine, boolean withStore) {}

    /**
     * Reads {@code snapshot} after checking its MD5 and header, and hands the store's part to {@code replicated}
     * (null: this peer keeps no replicated store, and the store's part, if any, is left unread).
     *
     * @throws IOException naming the file when it is not a snapshot of a known version, or when it holds no store
     *     while {@code replicated} needs one (it was taken at the level whose log carries store entries)
     */
    static Loaded read(SingleFileSnapshotInfo snapshot, Limits limits, ReplicatedResource replicated)
            throws IOException {
        Path file = snapshot.getFile().getPath();
        MD5Hash md5 = snapshot.getFile().getFileDigest();
        if (md5 != null) {
            MD5FileUtil.verifySavedMD5(file.toFile(), md5);
        }
        try (InputStream stream = Files.newInputStream(file);
                DataInputStream in = new DataInputStream(new BufferedInputStream(stream))) {
            int magic = in.readInt();
            int version = in.readInt();
            if (magic != SNAPSHOT_MAGIC
                    || (version != SNAPSHOT_FORMAT_VERSION && version != SNAPSHOT_FORMAT_VERSION_STORE)) {
                throw new IOException("snapshot " + file + " has magic " + Integer.toHexString(magic) + " version "
                        + version + ", expected " + Integer.toHexString(SNAPSHOT_MAGIC) + " version "
                        + SNAPSHOT_FORMAT_VERSION + " or " + SNAPSHOT_FORMAT_VERSION_STORE);
            }
            LockStateMachine restored = LockStateMachine.readSnapshot(in, limits);
            if (replicated != null) {
                if (version == SNAPSHOT_FORMAT_VERSION && restored.formatLevel() >= LockStateMachine.FORMAT_LEVEL_STORE) {
                    // Written at a level whose log may hold store entries by a peer that kept no replicated store:
                    // the entries it covers are gone from the log, so the store's state cannot be rebuilt from it.
                    throw new IOException("snapshot " + file + " holds no replicated store although the group's"
                            + " log may carry store entries before it (it was taken while this peer kept a"
                            + " single-node store): this peer cannot rebuild the replicated store; remove it from"
                            + " the group and add it again with an empty data directory (fencer peers remove/add)");
                }
                // Nothing applies meanwhile: Ratis loads a snapshot before it applies the entries after it.
                replicated.load(version == SNAPSHOT_FORMAT_VERSION_STORE ? in : null);
            }
            return new Loaded(restored, version == SNAPSHOT_FORMAT_VERSION_STORE);
        }
    }

    /** Writes what {@code content} writes into a file. */
    @FunctionalInterface
    interface FileContent {
        void writeTo(OutputStream out) throws IOException;
    }

    /** Returns the temporary file {@link #writeAtomically} writes {@code target}'s content to before the rename. */
    static Path temporaryOf(Path target) {
        return target.resolveSibling(target.getFileName() + ".tmp");
    }

    /** Writes {@code bytes} to a temporary file, forces it to disk, then renames it over {@code target}. */
    static void writeAtomically(Path target, byte[] bytes) throws IOException {
        writeAtomically(target, out -> out.write(bytes));
    }

    /** Writes {@code content} to a temporary file, forces it to disk, then renames it over {@code target}. */
    static void writeAtomically(Path target, FileContent content) throws IOException {
        Path temporary = temporaryOf(target);
        try (FileChannel channel = FileChannel.open(temporary, StandardOpenOption.CREATE,
                StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.WRITE);
                OutputStream out = new BufferedOutputStream(Channels.newOutputStream(channel))) {
            content.writeTo(out);
            out.flush();
            channel.force(true);
        }
        Files.move(temporary, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        try (FileChannel directory = FileChannel.open(target.getParent(), StandardOpenOption.READ)) {
            directory.force(true); // the rename itself must survive a crash
        } catch (IOException e) {
            LOG.debug("cannot fsync directory {}", target.getParent(), e);
        }
    }
}
