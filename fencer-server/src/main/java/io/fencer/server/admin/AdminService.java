package io.fencer.server.admin;

import com.google.protobuf.ByteString;
import io.fencer.api.v1.AdminGrpc;
import io.fencer.api.v1.BackupChunk;
import io.fencer.api.v1.BackupRequest;
import io.fencer.api.v1.StatusRequest;
import io.fencer.api.v1.StatusResponse;
import io.fencer.core.UnavailableException;
import io.fencer.lock.BackupFile;
import io.fencer.lock.LockStateMachine;
import io.fencer.server.auth.Authorizer;
import io.fencer.server.auth.Permission;
import io.fencer.server.raft.ApplyHalt;
import io.fencer.server.raft.Proposer;
import io.fencer.server.raft.RaftLockStateMachine;
import io.fencer.server.raft.RaftNode;
import io.fencer.server.rpc.InFlightLimit;
import io.fencer.server.rpc.Replies;
import io.fencer.server.rpc.StallWatch;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.LongSupplier;
import org.apache.ratis.protocol.RaftGroupId;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Admin service of the wire contract (admin.proto): a peer's status, and backups. Its semantics are the
 * contract's; this class checks access, reads the state and streams the file.
 */
public final class AdminService extends AdminGrpc.AdminImplBase {
    private static final Logger LOG = LoggerFactory.getLogger(AdminService.class);
    /** The most bytes of a backup in one message. */
    static final int CHUNK_BYTES_MAX = 1 << 20;
    /** The most backups in flight on one server ({@code backupsInFlightMax}, operations.md). */
    static final int BACKUPS_IN_FLIGHT_MAX = 2;

    private final RaftNode raft;
    private final RaftLockStateMachine stateMachine;
    private final Proposer proposer;
    private final Authorizer authorizer;
    private final LongSupplier wallClockMillis;
    private final ScheduledExecutorService timers;
    private final Duration stallTimeout;
    private final InFlightLimit backups = new InFlightLimit("backupsInFlightMax", BACKUPS_IN_FLIGHT_MAX, "backup");

    /**
     * @param wallClockMillis the time written into a backup's head, for people to read; nothing depends on it
     * @param timers where a backup's stall is looked for
     * @param stallTimeout how long a backup may wait for its client to take its next chunk
     *     ({@link io.fencer.server.net.PortLimits#backupStallTimeout})
     */
    public AdminService(RaftNode raft, RaftLockStateMachine stateMachine, Proposer proposer, Authorizer authorizer,
            LongSupplier wallClockMillis, ScheduledExecutorService timers, Duration stallTimeout) {
        this.raft = raft;
        this.stateMachine = stateMachine;
        this.proposer = proposer;
        this.authorizer = authorizer;
        this.wallClockMillis = wallClockMillis;
        this.timers = timers;
        this.stallTimeout = stallTimeout;
    }

    @Override
    public void status(StatusRequest request, StreamObserver<StatusResponse> out) {
        StatusResponse response = null;
        Throwable error = null;
        try {
            authorizer.checkSomewhere(Permission.READ);
            StatusResponse.Builder status = stateMachine.readLocal(machine -> StatusResponse.newBuilder()
                    .setGroupFormatLevel(machine.formatLevel()).setGeneration(machine.generation())
                    .setHighestToken(machine.highestToken()));
            String leader = raft.leaderClientAddress();
            response = status.setPeerId(raft.peerId()).setReleaseFormatLevel(LockStateMachine.FORMAT_LEVEL)
                    .setAppliedIndex(raft.appliedIndex()).setLeader(raft.isLeader())
                    .setLeaderAddress(leader == null ? "" : leader).build();
        } catch (RuntimeException e) {
            error = e;
        }
        Replies.send(out, response, error);
    }

    /**
     * Streams a backup (admin.proto). Each holds its whole file until its client has read it, so at most
     * {@link #BACKUPS_IN_FLIGHT_MAX} are in flight; a slot is freed when the stream completes, fails, is cancelled or
     * stalls (its client takes no chunk for the stall timeout).
     */
    @Override
    public void backup(BackupRequest request, StreamObserver<BackupChunk> out) {
        ServerCallStreamObserver<BackupChunk> call = (ServerCallStreamObserver<BackupChunk>) out;
        Runnable slot;
        try {
            authorizer.checkPrefix(Permission.ADMIN, "");
            checkLeader();
            slot = backups.take();
        } catch (RuntimeException e) {
            Replies.send(out, null, e);
            return;
        }
        Stream stream = new Stream(call, slot);
        call.setOnReadyHandler(stream::drain); // only while this method runs, so before the file exists
        call.setOnCancelHandler(stream::cancelled);
        RaftGroupId group = raft.groupId();
        long started = System.nanoTime();
        proposer.read(machine -> new BackupFile.Contents(BackupFile.Kind.BACKUP, wallClockMillis.getAsLong(),
                group.getUuid(), stateMachine.getLastAppliedTermIndex().getIndex(), BackupFile.stateOf(machine)))
                .thenApply(BackupFile::write)
                .whenComplete((file, error) -> {
                    if (error != null) {
                        stream.fail(error);
                        return;
                    }
                    LOG.info("backup taken: {} bytes of group {} in {} ms", file.length, group.getUuid(),
                            (System.nanoTime() - started) / 1_000_000);
                    stream.start(file, StallWatch.start(call, timers, stallTimeout, "backupStallTimeout",
                            stream::fail));
                });
    }

    /**
     * A backup file sent in chunks as the client asks for them (its flow control), then the call completed. The
     * stream's slot and its file are let go when it ends however it ends; a stream cancelled while its file is made
     * keeps its slot until the file exists, so cancelled backups cannot pile up files being made.
     */
    private static final class Stream {
        private final ServerCallStreamObserver<BackupChunk> call;
        private final Runnable slot;
        private byte[] file; // guarded by this
        private int offset; // guarded by this
        private boolean making = true; // guarded by this
        private boolean ended; // guarded by this
        private StallWatch stall; // guarded by this

        Stream(ServerCallStreamObserver<BackupChunk> call, Runnable slot) {
            this.call = call;
            this.slot = slot;
        }

        synchronized void start(byte[] made, StallWatch watch) {
            making = false;
            stall = watch;
            if (ended) {
                end(); // cancelled while it was made
                return;
            }
            this.file = made;
            drain();
        }

        synchronized void drain() {
            if (file == null || ended) {
                return;
            }
            if (call.isCancelled()) {
                end();
                return;
            }
            while (call.isReady() && offset < file.length) {
                int length = Math.min(CHUNK_BYTES_MAX, file.length - offset);
                call.onNext(BackupChunk.newBuilder().setData(ByteString.copyFrom(file, offset, length)).build());
                offset += length;
                stall.sent();
            }
            if (offset == file.length) {
                end();
                call.onCompleted();
            }
        }

        synchronized void cancelled() {
            end();
        }

        void fail(Throwable error) {
            synchronized (this) {
                making = false;
                boolean endedBefore = ended;
                end();
                if (endedBefore) {
                    return;
                }
            }
            Replies.send(call, null, error);
        }

        /** Ends the stream: drops the file, and frees the slot unless the file is still being made. */
        private void end() {
            ended = true;
            file = null;
            if (stall != null) {
                stall.stop();
            }
            if (!making) {
                slot.run();
            }
        }
    }

    private void checkLeader() {
        ApplyHalt halted = stateMachine.halt();
        if (halted != null) {
            throw new UnavailableException(halted.message());
        }
        raft.checkLeader();
    }
}
