package io.fencer.server.raft;

import io.fencer.lock.Applied;
import io.fencer.lock.Command;
import io.fencer.lock.CommandCodec;
import io.fencer.lock.Event;
import io.fencer.lock.IdentityUsage;
import io.fencer.lock.Limits;
import io.fencer.lock.LockStateMachine;
import io.fencer.lock.Result;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;
import org.apache.ratis.io.MD5Hash;
import org.apache.ratis.proto.RaftProtos.LogEntryProto;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftClientRequest;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftGroupMemberId;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.protocol.TermIndex;
import org.apache.ratis.server.raftlog.RaftLog;
import org.apache.ratis.server.storage.FileInfo;
import org.apache.ratis.server.storage.RaftStorage;
import org.apache.ratis.statemachine.StateMachineStorage;
import org.apache.ratis.statemachine.TransactionContext;
import org.apache.ratis.statemachine.impl.BaseStateMachine;
import org.apache.ratis.statemachine.impl.SimpleStateMachineStorage;
import org.apache.ratis.statemachine.impl.SingleFileSnapshotInfo;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;
import org.apache.ratis.thirdparty.com.google.protobuf.UnsafeByteOperations;
import org.apache.ratis.util.MD5FileUtil;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Ratis state machine of the lock service: it applies log entries (batches of {@link Command}s) to one
 * {@link LockStateMachine}, replies with their {@link Result}s, hands the {@link Event}s to the server's
 * listeners, and snapshots the whole state to one file.
 *
 * <p>{@link LockStateMachine} is not thread-safe: applies, snapshots and reads all run under {@link #lock}.
 * Reads that must be linearizable go through Ratis read requests: the proposer registers a {@link ReadTask} and
 * sends its id as the query; Ratis calls {@link #query} once the read index is applied, and the task runs there.
 */
public final class RaftLockStateMachine extends BaseStateMachine {
    private static final Logger LOG = LoggerFactory.getLogger(RaftLockStateMachine.class);
    /** "FNCR": the first bytes of every snapshot file. */
    private static final int SNAPSHOT_MAGIC = 0x464e4352;
    private static final int SNAPSHOT_FORMAT_VERSION = 1;

    private final Limits limits;
    private final SimpleStateMachineStorage storage = new SimpleStateMachineStorage();
    private final ReentrantLock lock = new ReentrantLock();
    private final List<AppliedListener> listeners = new CopyOnWriteArrayList<>();
    private final List<Runnable> leadershipHooks = new CopyOnWriteArrayList<>();
    private final ConcurrentHashMap<Long, ReadTask<?>> reads = new ConcurrentHashMap<>();
    private LockStateMachine machine; // guarded by lock
    private volatile Counts counts = new Counts(0, 0, 0);
    /**
     * The usage of each identity with an open session, as of the last apply: published from the machine's changes
     * after every log entry (and whole after a snapshot is loaded), under the lock, before the entry's proposers are
     * answered; read without the lock by the leader's quota checks.
     */
    private final ConcurrentHashMap<String, IdentityUsage> usage = new ConcurrentHashMap<>();

    /** Sizes of the state, published after every apply for gauges that must not take the lock. */
    public record Counts(int sessions, int locks, int waiters) {}

    public RaftLockStateMachine(Limits limits) {
        this.limits = Objects.requireNonNull(limits, "limits");
        this.machine = new LockStateMachine(limits);
    }

    /** Adds a receiver of the events of every entry applied from now on (before the start: the log replay too). */
    public void addListener(AppliedListener listener) {
        listeners.add(Objects.requireNonNull(listener, "listener"));
    }

    /**
     * Adds a hook run (on a Ratis thread, so it must be quick) when the leader changes and when this peer, as the
     * new leader, has applied its whole log.
     */
    public void addLeadershipHook(Runnable hook) {
        leadershipHooks.add(Objects.requireNonNull(hook, "hook"));
    }

    /**
     * Returns what the sessions of {@code quotaIdentity} held as of the last apply, without taking the lock: a
     * proposal's effect is in it once the proposal's future completes.
     */
    public IdentityUsage usage(String quotaIdentity) {
        return usage.getOrDefault(quotaIdentity, IdentityUsage.NONE);
    }

    /** Returns the sizes of the state as of the last apply, without taking the lock. */
    public Counts counts() {
        return counts;
    }

    /** Runs {@code reader} on the current state under the apply lock; not linearizable (see the class doc). */
    public <T> T readLocal(Function<LockStateMachine, T> reader) {
        lock.lock();
        try {
            return reader.apply(machine);
        } finally {
            lock.unlock();
        }
    }

    /** Registers a read to run in {@link #query} for the message {@link #readMessage(long)} of {@code id}. */
    <T> CompletableFuture<T> registerRead(long id, Function<LockStateMachine, T> reader) {
        ReadTask<T> task = new ReadTask<>(reader);
        ReadTask<?> previous = reads.putIfAbsent(id, task);
        if (previous != null) {
            throw new IllegalStateException("read id " + id + " registered twice");
        }
        return task.result;
    }

    /** Forgets a registered read whose request failed; returns true when it had not run yet. */
    boolean cancelRead(long id) {
        return reads.remove(id) != null;
    }

    static Message readMessage(long id) {
        ByteBuffer bytes = ByteBuffer.allocate(Long.BYTES).putLong(0, id);
        return Message.valueOf(ByteString.copyFrom(bytes));
    }

    @Override
    public void initialize(RaftServer server, RaftGroupId groupId, RaftStorage raftStorage) throws IOException {
        super.initialize(server, groupId, raftStorage);
        storage.init(raftStorage);
        loadSnapshot(storage.getLatestSnapshot());
    }

    @Override
    public void reinitialize() throws IOException {
        // Called after a snapshot was installed from the leader: the newest file on disk is the state to take.
        loadSnapshot(storage.loadLatestSnapshot());
    }

    @Override
    public StateMachineStorage getStateMachineStorage() {
        return storage;
    }

    /**
     * Refuses a proposal that is not a current-version command batch before it reaches the log. The codec still
     * decodes version 1, the previous release's, whose commands are applied without the secret check (they carry
     * no secret hash): that is for entries already in an upgraded log only, never for new ones.
     */
    @Override
    public TransactionContext startTransaction(RaftClientRequest request) throws IOException {
        TransactionContext transaction = super.startTransaction(request);
        ByteString content = request.getMessage().getContent();
        if (content.isEmpty() || content.byteAt(0) != CommandCodec.VERSION) {
            int version = content.isEmpty() ? -1 : Byte.toUnsignedInt(content.byteAt(0));
            transaction.setException(new IllegalArgumentException("a proposed command batch has version " + version
                    + ", but only version " + CommandCodec.VERSION + " is accepted into the log"));
        }
        return transaction;
    }

    @Override
    public CompletableFuture<Message> applyTransaction(TransactionContext transaction) {
        LogEntryProto entry = Objects.requireNonNull(transaction.getLogEntry(), "log entry");
        List<Result> results;
        List<Event> events = new ArrayList<>();
        lock.lock();
        try {
            List<Command> commands = CommandCodec.decodeCommands(
                    entry.getStateMachineLogEntry().getLogData().toByteArray());
            results = new ArrayList<>(commands.size());
            for (Command command : commands) {
                Applied applied = machine.apply(command);
                results.add(applied.result());
                events.addAll(applied.events());
            }
        } catch (RuntimeException e) {
            // Deterministic on every replica; the entry is consumed so the log keeps moving, and its proposers
            // learn that something is badly wrong.
            LOG.error("applying log entry {} failed", TermIndex.valueOf(entry), e);
            return CompletableFuture.failedFuture(e);
        } finally {
            updateLastAppliedTermIndex(entry.getTerm(), entry.getIndex());
            counts = new Counts(machine.sessionCount(), machine.lockCount(), machine.waiterCount());
            publishUsageChanges();
            lock.unlock();
        }
        notifyListeners(entry.getIndex(), events);
        byte[] reply = CommandCodec.encodeResults(results);
        return CompletableFuture.completedFuture(Message.valueOf(UnsafeByteOperations.unsafeWrap(reply)));
    }

    /** Publishes the usage the last entry changed; an identity whose sessions all ended leaves the map. Under lock. */
    private void publishUsageChanges() {
        machine.takeUsageChanges().forEach((identity, changed) -> {
            if (changed.equals(IdentityUsage.NONE)) {
                usage.remove(identity);
            } else {
                usage.put(identity, changed);
            }
        });
    }

    private void notifyListeners(long revision, List<Event> events) {
        for (AppliedListener listener : listeners) {
            try {
                listener.onApplied(revision, events);
            } catch (RuntimeException e) {
                LOG.error("listener {} failed on events {}", listener, events, e);
            }
        }
    }

    @Override
    public CompletableFuture<Message> query(Message request) {
        ByteString content = request.getContent();
        if (content.size() != Long.BYTES) {
            return CompletableFuture.failedFuture(new IllegalArgumentException(
                    "query of " + content.size() + " bytes, expected a read id of " + Long.BYTES));
        }
        long id = content.asReadOnlyByteBuffer().getLong();
        ReadTask<?> task = reads.remove(id);
        if (task != null) {
            lock.lock();
            try {
                task.run(machine);
            } finally {
                lock.unlock();
            }
        }
        return CompletableFuture.completedFuture(Message.EMPTY);
    }

    @Override
    public void notifyLeaderReady() {
        leadershipHooks.forEach(Runnable::run);
    }

    @Override
    public void notifyLeaderChanged(RaftGroupMemberId memberId, RaftPeerId newLeaderId) {
        LOG.info("{}: the leader is now {}", memberId, newLeaderId);
        leadershipHooks.forEach(Runnable::run);
    }

    @Override
    public long takeSnapshot() throws IOException {
        TermIndex last;
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        lock.lock();
        try {
            last = getLastAppliedTermIndex();
            if (last == null || last.getIndex() < 0) {
                return RaftLog.INVALID_LOG_INDEX; // nothing applied yet: nothing to snapshot
            }
            DataOutputStream out = new DataOutputStream(bytes);
            out.writeInt(SNAPSHOT_MAGIC);
            out.writeInt(SNAPSHOT_FORMAT_VERSION);
            machine.writeSnapshot(out);
            out.flush();
        } finally {
            lock.unlock();
        }
        File file = storage.getSnapshotFile(last.getTerm(), last.getIndex());
        if (!file.exists()) {
            writeAtomically(file.toPath(), bytes.toByteArray());
        }
        MD5Hash md5 = MD5FileUtil.computeAndSaveMd5ForFile(file);
        storage.updateLatestSnapshot(new SingleFileSnapshotInfo(new FileInfo(file.toPath(), md5), last));
        LOG.info("snapshot {} written: {} bytes at {}", last, bytes.size(), file);
        return last.getIndex();
    }

    /** Writes {@code bytes} to a temporary file, forces it to disk, then renames it over {@code target}. */
    private static void writeAtomically(Path target, byte[] bytes) throws IOException {
        Path temporary = target.resolveSibling(target.getFileName() + ".tmp");
        try (FileChannel channel = FileChannel.open(temporary, StandardOpenOption.CREATE,
                StandardOpenOption.TRUNCATE_EXISTING, StandardOpenOption.WRITE);
                OutputStream out = new BufferedOutputStream(Channels.newOutputStream(channel))) {
            out.write(bytes);
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

    private void loadSnapshot(SingleFileSnapshotInfo snapshot) throws IOException {
        if (snapshot == null) {
            LOG.info("no snapshot: starting from an empty state and the log");
            return;
        }
        Path file = snapshot.getFile().getPath();
        MD5Hash md5 = snapshot.getFile().getFileDigest();
        if (md5 != null) {
            MD5FileUtil.verifySavedMD5(file.toFile(), md5);
        }
        LockStateMachine restored;
        try (InputStream stream = Files.newInputStream(file);
                DataInputStream in = new DataInputStream(new BufferedInputStream(stream))) {
            int magic = in.readInt();
            int version = in.readInt();
            if (magic != SNAPSHOT_MAGIC || version != SNAPSHOT_FORMAT_VERSION) {
                throw new IOException("snapshot " + file + " has magic " + Integer.toHexString(magic) + " version "
                        + version + ", expected " + Integer.toHexString(SNAPSHOT_MAGIC) + " version "
                        + SNAPSHOT_FORMAT_VERSION);
            }
            restored = LockStateMachine.readSnapshot(in, limits);
        }
        lock.lock();
        try {
            machine = restored;
            setLastAppliedTermIndex(snapshot.getTermIndex());
            counts = new Counts(machine.sessionCount(), machine.lockCount(), machine.waiterCount());
            usage.clear();
            usage.putAll(machine.usageByIdentity());
        } finally {
            lock.unlock();
        }
        LOG.info("state loaded from snapshot {} ({} sessions, {} locks)", snapshot.getTermIndex(),
                counts.sessions(), counts.locks());
        for (AppliedListener listener : listeners) {
            listener.onStateLoaded(snapshot.getIndex());
        }
    }

    /** A read waiting for {@link #query}; completes its future with the reader's answer or its failure. */
    private static final class ReadTask<T> {
        private final Function<LockStateMachine, T> reader;
        private final CompletableFuture<T> result = new CompletableFuture<>();

        ReadTask(Function<LockStateMachine, T> reader) {
            this.reader = Objects.requireNonNull(reader, "reader");
        }

        void run(LockStateMachine machine) {
            try {
                result.complete(reader.apply(machine));
            } catch (RuntimeException e) {
                result.completeExceptionally(e);
            }
        }
    }
}
