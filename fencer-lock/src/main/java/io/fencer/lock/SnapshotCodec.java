package io.fencer.lock;

import io.fencer.core.FencerException;
import io.fencer.core.LockMode;
import io.fencer.core.internal.LockName;
import io.fencer.core.LockNames;
import java.io.DataInput;
import java.io.DataOutput;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

/**
 * The snapshot format of the lock state, its one owner: {@link LockStateMachine#writeSnapshot} and
 * {@link LockStateMachine#readSnapshot} come here. Versioned by a leading byte; this class writes version 5 (version 4
 * while the group is at format level 4, see below) and reads versions 1 to 5, since a server upgraded on its old data
 * directory restores its last snapshot before it replays its log (see {@link CommandCodec} for why old data must load).
 *
 * <p>Format (version 4, in {@link DataOutput}'s big-endian encodings, strings as {@code writeUTF}): {@code
 * version:u8, sessionIdLast:i64, floor:i64}; the sessions in id order, each {@code id:i64, ttlMillis:i64, requestId,
 * identity, secretHash (32 bytes), quotaIdentity, leaseBoundMillis:i64}, then its held and its waited-for locks as
 * name lists; the lock records in name order, each {@code name, lastToken:i64, holderSessionId:i64,
 * holderTokenValue:i64, delayed:bool, lastEnd:i8 (-1 for none)}, its waiters in queue order ({@code sessionId:i64,
 * requestId, mode:u8}, then the multi-lock's names, empty for a plain wait) and its shared holders ({@code
 * sessionId:i64, token:i64}); then the semaphores in use in name order, each {@code name, permits:i32} and its queue
 * ({@code sessionId:i64, requestId}). Every list is an {@code i32} count and its items. The quota usage is not
 * written: it is derived, and rebuilt from the sessions as they are read.
 *
 * <p>Version 5 (format level 5) adds {@code formatLevel:u8, generation:i32} after the floor. A group at format level
 * 4 writes version 4, which the previous release reads (a snapshot goes to a lagging follower as it is), so that a
 * downgrade stays possible until the level is raised ({@link LockStateMachine#FORMAT_LEVEL}).
 */
final class SnapshotCodec {
    /** The leading byte of a snapshot; a reader refuses versions it does not know. */
    static final int VERSION = 5;
    /** Version 4: the layout of version 5 without the format level and generation; written at format level 4. */
    static final int VERSION_FOUR = 4;
    /** Version 3: sessions without quota identity or lease bound (they count against their identity). Read. */
    static final int VERSION_THREE = 3;
    /** Version 2: sessions with identity and secret hash, locks without shared holders or waiter modes. Read. */
    static final int VERSION_TWO = 2;
    /** The previous release's snapshot: sessions without identity or secret hash. Read, never written. */
    static final int VERSION_ONE = 1;

    private SnapshotCodec() {}

    /**
     * Writes the whole state; {@link #read} restores an equal one. A session is written with its identity and the
     * hash of its secret: the secret itself is never in the state.
     */
    static void write(MachineState state, DataOutput out) throws IOException {
        boolean levelFive = state.formatLevel >= LockStateMachine.FORMAT_LEVEL_GENERATIONS;
        assert levelFive || state.generation == 0
                : "generation " + state.generation + " at format level " + state.formatLevel;
        out.writeByte(levelFive ? VERSION : VERSION_FOUR);
        out.writeLong(state.sessionIdLast);
        out.writeLong(state.floor);
        if (levelFive) {
            out.writeByte(state.formatLevel);
            out.writeInt(state.generation);
        }
        out.writeInt(state.sessions.size());
        for (SessionRecord session : state.sessions.values()) {
            out.writeLong(session.id);
            out.writeLong(session.ttlMillis);
            out.writeUTF(session.requestId);
            out.writeUTF(session.identity);
            out.write(session.secretHash.bytes());
            out.writeUTF(session.quotaIdentity);
            out.writeLong(session.leaseBoundMillis);
            writeNames(out, session.held());
            writeNames(out, session.waiting());
        }
        out.writeInt(state.locks.size());
        for (LockRecord record : state.locks.values()) {
            out.writeUTF(record.name);
            out.writeLong(record.lastToken);
            out.writeLong(record.holderSessionId);
            out.writeLong(record.holderTokenValue);
            out.writeBoolean(record.delayed);
            out.writeByte(record.lastEnd == null ? -1 : record.lastEnd.ordinal());
            out.writeInt(record.waiters.size());
            for (Map.Entry<Long, LockRecord.Waiter> waiter : record.waiters.entrySet()) {
                out.writeLong(waiter.getKey());
                out.writeUTF(waiter.getValue().requestId());
                out.writeByte(waiter.getValue().mode().ordinal());
                List<String> group = waiter.getValue().group();
                writeNames(out, group == null ? List.of() : group);
            }
            out.writeInt(record.sharedHolders.size());
            for (Map.Entry<Long, Long> holder : record.sharedHolders.entrySet()) {
                out.writeLong(holder.getKey());
                out.writeLong(holder.getValue());
            }
        }
        writeSemaphores(state, out);
    }

    /** Writes the semaphores in use (since version 3): name, permits, queue; their slots are among the locks. */
    private static void writeSemaphores(MachineState state, DataOutput out) throws IOException {
        out.writeInt(state.semaphores.size());
        for (SemaphoreRecord semaphore : state.semaphores.values()) {
            out.writeUTF(semaphore.name);
            out.writeInt(semaphore.permits);
            out.writeInt(semaphore.waiters.size());
            for (Map.Entry<Long, String> waiter : semaphore.waiters.entrySet()) {
                out.writeLong(waiter.getKey());
                out.writeUTF(waiter.getValue());
            }
        }
    }

    private static void writeNames(DataOutput out, Collection<String> names) throws IOException {
        out.writeInt(names.size());
        for (String name : names) {
            out.writeUTF(name);
        }
    }

    /**
     * Reads a state written by {@link #write}, or by an earlier release (versions 1 to 4). The state is checked
     * whole: a corrupt snapshot fails with an {@link IOException} saying what is wrong, never yields a machine that
     * breaks its invariants. The quota usage is rebuilt as the sessions are read, and starts with no changes to
     * publish: a state read whole has nothing new but its whole usage.
     *
     * <p>A version-3 snapshot (before quotas) has the layout of version 4 without a session's quota identity and lease
     * bound: its sessions count against their own identity (every anonymous caller's together) and have no recorded
     * bound, so a new leader gives them their whole ttl, as that release did.
     *
     * <p>A version-2 snapshot (before read-write locks) has the layout of version 3 without a waiter's mode and a
     * lock's shared holders: its waiters are exclusive and it has no shared holders.
     *
     * <p>A version-1 snapshot has the same layout as version 2 without a session's identity and secret hash. Its
     * sessions are restored with the identity {@link CommandCodec#VERSION_ONE_IDENTITY} and the hash
     * {@link SecretHash#NONE}: nobody can act for them, so they expire at the end of their lease and their locks pass
     * on with higher tokens; every token counter and the floor are kept as they were, so every later grant is above
     * every token the old state issued. The next snapshot is written as version 4, with the {@link SecretHash#NONE}
     * bytes.
     */
    static MachineState read(DataInput in, Limits limits) throws IOException {
        Objects.requireNonNull(in, "in");
        int version = in.readUnsignedByte();
        if (version < VERSION_ONE || version > VERSION) {
            throw new IOException("unsupported lock state snapshot version " + version + ", expected " + VERSION
                    + " (or " + VERSION_FOUR + ", " + VERSION_THREE + ", " + VERSION_TWO + " or " + VERSION_ONE
                    + ", of earlier releases)");
        }
        MachineState state = new MachineState(limits);
        try {
            state.sessionIdLast = in.readLong();
            state.floor = in.readLong();
            if (version >= VERSION) {
                readLevel(state, in);
            }
            readSessions(state, in, version);
            readLocks(state, in, version);
            if (version >= VERSION_THREE) {
                readSemaphores(state, in);
            }
            new LockInvariants(state).check();
            state.usage.takeChanges(); // a state read whole starts with nothing to publish but its whole usage
        } catch (IllegalStateException | IllegalArgumentException | FencerException e) {
            throw new IOException("corrupt lock state snapshot: " + e.getMessage(), e);
        }
        return state;
    }

    /** Reads the format level and generation of a version-5 snapshot, checking them against the floor. */
    private static void readLevel(MachineState state, DataInput in) throws IOException {
        state.formatLevel = in.readUnsignedByte();
        state.generation = in.readInt();
        if (state.formatLevel < LockStateMachine.FORMAT_LEVEL_GENERATIONS
                || state.formatLevel > LockStateMachine.FORMAT_LEVEL) {
            throw new IOException("snapshot of format level " + state.formatLevel + ": this release reads levels up to "
                    + LockStateMachine.FORMAT_LEVEL + " (a later release wrote it?)");
        }
        if (state.generation < 0 || state.generation > io.fencer.core.FencingToken.GENERATION_MAX
                || state.floor > io.fencer.core.FencingToken.generationLast(state.generation)) {
            throw new IOException("snapshot of generation " + state.generation + " has floor " + state.floor
                    + " outside that generation");
        }
    }

    private static void readSessions(MachineState state, DataInput in, int version) throws IOException {
        int count = readCount(in, "sessions");
        for (int i = 0; i < count; i++) {
            long id = in.readLong();
            long ttlMillis = in.readLong();
            if (ttlMillis < 1) { // not the configured bounds, which may have narrowed since: none admits less than 1 ms
                throw new IOException("session " + id + " has ttl " + ttlMillis + " ms, below 1 ms");
            }
            String requestId = in.readUTF();
            Limits.checkRequestId(requestId, true);
            String identity = CommandCodec.VERSION_ONE_IDENTITY;
            SecretHash secretHash = SecretHash.NONE;
            if (version != VERSION_ONE) {
                identity = in.readUTF();
                Limits.checkIdentity(identity);
                byte[] hash = new byte[SecretHash.BYTES];
                in.readFully(hash);
                secretHash = SecretHash.fromBytes(hash);
            }
            String quotaIdentity = identity;
            long leaseBoundMillis = SessionRecord.NO_LEASE_BOUND;
            if (version >= VERSION_FOUR) {
                quotaIdentity = in.readUTF();
                Limits.checkIdentity(quotaIdentity);
                leaseBoundMillis = in.readLong();
                if (leaseBoundMillis < SessionRecord.NO_LEASE_BOUND || leaseBoundMillis > ttlMillis) {
                    throw new IOException("session " + id + " has lease bound " + leaseBoundMillis
                            + " ms outside [-1, ttl " + ttlMillis + " ms]");
                }
            }
            SessionRecord session = new SessionRecord(id, ttlMillis, requestId, identity, secretHash, quotaIdentity,
                    state.usage.counter(quotaIdentity));
            session.leaseBoundMillis = leaseBoundMillis;
            if (state.sessions.put(id, session) != null) {
                throw new IOException("snapshot lists session " + id + " twice");
            }
            if (!requestId.isEmpty() && state.sessionIdsByRequestId.put(requestId, id) != null) {
                throw new IOException("snapshot lists request id '" + requestId + "' for two sessions");
            }
            Set<String> held = new LinkedHashSet<>();
            readNames(in, held, "held locks of session " + id);
            held.forEach(session::addHeld);
            Set<String> waiting = new LinkedHashSet<>();
            readNames(in, waiting, "waits of session " + id);
            waiting.forEach(session::addWaiting);
        }
    }

    private static void readNames(DataInput in, Collection<String> names, String what) throws IOException {
        int count = readCount(in, what);
        for (int i = 0; i < count; i++) {
            String name = LockNames.check(in.readUTF());
            if (!names.add(name)) {
                throw new IOException("snapshot lists lock '" + name + "' twice in " + what);
            }
        }
    }

    private static void readLocks(MachineState state, DataInput in, int version) throws IOException {
        int count = readCount(in, "locks");
        for (int i = 0; i < count; i++) {
            LockRecord record = new LockRecord(LockName.of(in.readUTF()), in.readLong());
            record.holderSessionId = in.readLong();
            record.holderTokenValue = in.readLong();
            record.delayed = in.readBoolean();
            int lastEnd = in.readByte();
            if (lastEnd < -1 || lastEnd >= EndCause.values().length) {
                throw new IOException("lock '" + record.name + "' has unknown end cause " + lastEnd);
            }
            record.lastEnd = lastEnd == -1 ? null : EndCause.values()[lastEnd];
            int waiters = readCount(in, "waiters of lock " + record.name);
            for (int w = 0; w < waiters; w++) {
                long sessionId = in.readLong();
                String requestId = in.readUTF();
                Limits.checkRequestId(requestId, false);
                LockMode mode = version >= VERSION_THREE ? readMode(in, record.name) : LockMode.EXCLUSIVE;
                List<String> group = null;
                if (version >= VERSION_THREE) {
                    List<String> names = new ArrayList<>();
                    readNames(in, names, "multi-lock of session " + sessionId + " on lock " + record.name);
                    group = names.isEmpty() ? null : List.copyOf(names);
                }
                if (record.waiters.put(sessionId, new LockRecord.Waiter(requestId, mode, group)) != null) {
                    throw new IOException("session " + sessionId + " waits twice on lock '" + record.name + "'");
                }
            }
            if (version >= VERSION_THREE) {
                readSharedHolders(in, record);
            }
            if (state.locks.put(record.name, record) != null) {
                throw new IOException("snapshot lists lock '" + record.name + "' twice");
            }
            if (record.delayed) {
                state.delayed.add(record.name);
            }
            state.waiterCount += record.waiters.size();
        }
    }

    /** Reads the semaphores, links their slots and rebuilds the sessions' permit waits from their queues. */
    private static void readSemaphores(MachineState state, DataInput in) throws IOException {
        int count = readCount(in, "semaphores");
        for (int i = 0; i < count; i++) {
            LockName name = LockName.of(in.readUTF());
            int permits = in.readInt();
            Limits.checkPermits(name.value(), permits);
            SemaphoreRecord semaphore = new SemaphoreRecord(name, permits);
            int waiters = readCount(in, "waiters of semaphore " + name.value());
            for (int w = 0; w < waiters; w++) {
                long sessionId = in.readLong();
                String requestId = in.readUTF();
                Limits.checkRequestId(requestId, false);
                SessionRecord session = state.sessions.get(sessionId);
                if (session == null || semaphore.waiters.put(sessionId, requestId) != null) {
                    throw new IOException("semaphore '" + name.value() + "' lists waiter session " + sessionId
                            + (session == null ? ", which is unknown" : " twice"));
                }
                session.addPermitWait(name.value());
            }
            if (state.semaphores.put(semaphore.name, semaphore) != null) {
                throw new IOException("snapshot lists semaphore '" + semaphore.name + "' twice");
            }
            for (int permit = 0; permit < permits; permit++) {
                LockRecord slot = state.locks.get(semaphore.slot(permit));
                if (slot != null) {
                    slot.semaphore = semaphore;
                }
            }
            state.waiterCount += semaphore.waiters.size();
        }
    }

    private static LockMode readMode(DataInput in, String lock) throws IOException {
        int mode = in.readByte();
        if (mode < 0 || mode >= LockMode.values().length) {
            throw new IOException("a waiter of lock '" + lock + "' has unknown mode " + mode);
        }
        return LockMode.values()[mode];
    }

    private static void readSharedHolders(DataInput in, LockRecord record) throws IOException {
        int holders = readCount(in, "shared holders of lock " + record.name);
        for (int h = 0; h < holders; h++) {
            long sessionId = in.readLong();
            if (record.sharedHolders.put(sessionId, in.readLong()) != null) {
                throw new IOException("session " + sessionId + " shares lock '" + record.name + "' twice");
            }
        }
    }

    /** Reads a count; the items it counts are read one by one, so a corrupt count fails at end of input. */
    private static int readCount(DataInput in, String what) throws IOException {
        int count = in.readInt();
        if (count < 0) {
            throw new IOException("snapshot has a negative count " + count + " of " + what);
        }
        return count;
    }
}
