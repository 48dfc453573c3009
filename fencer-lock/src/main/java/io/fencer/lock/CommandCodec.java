package io.fencer.lock;

import io.fencer.core.internal.ErrorFields;
import io.fencer.core.ErrorReason;
import io.fencer.core.FencePolicy;
import io.fencer.core.FencerException;
import io.fencer.core.FencingToken;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LockMode;
import io.fencer.core.internal.LockName;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * The binary form of commands in the replicated log, and of results in replies. A log entry holds a batch
 * of commands, applied in order. Versioned by a leading byte so later versions can read older logs.
 *
 * <p>Format (version 2, big-endian): {@code version:u8, count:i32, count × (tag:u8, fields)}. Strings are an
 * {@code i32} byte length (-1 for null) and strict UTF-8; booleans one byte 0 or 1; an optional token is a
 * boolean then {@code lock:string, value:i64} (in results, since version 3, then {@code mode:u8}); a
 * {@link SecretHash} is its 32 bytes. Version 2 added the identity
 * and secret hash of OpenSession and the secret hash (and Release's session id) of the commands a client makes for
 * a session. Decoding refuses garbage, truncation, unknown tags and trailing bytes with an
 * {@link IllegalArgumentException} naming the offset, and reads every length and count against the bytes left
 * before allocating.
 *
 * <p>Version 3 (read-write locks) is version 2 plus the command tag {@code ACQUIRE_IN_MODE} (8): an Acquire
 * followed by its {@link LockMode} as one byte (its ordinal). An exclusive Acquire is still written with tag 4, so a
 * version-3 batch of mutex commands differs from version 2 in its version byte only. The codec always writes
 * version 3, and reads command batches of versions 1, 2 and 3; a version-2 batch holding tag 8 is refused.
 * Version 3 also adds tag {@code ACQUIRE_PERMIT} (9): {@code sessionId:i64, secretHash, semaphore:string,
 * permits:i32, requestId:string, waitQueued:bool}, and {@code ACQUIRE_ALL} (10): {@code sessionId:i64, secretHash,
 * count:i32, count × lock:string, requestId:string, waitQueued:bool}.
 *
 * <p>Version 4 (quotas and lease checkpoints) is version 3 plus the command tags {@code OPEN_SESSION_FOR} (11): an
 * OpenSession followed by its quota identity as a string, written when that differs from the identity (an anonymous
 * caller's, which is its address); and {@code CHECKPOINT_LEASES} (12): {@code count:i32, count × (sessionId:i64,
 * remainingMillis:i64)}. An OpenSession whose quota identity is its identity is still written with tag 1, and an
 * OpenSession read with tag 1 (of any version) counts against its identity. The codec writes version 4 and reads
 * versions 1 to 4; a batch of an earlier version holding tag 11 or 12 is refused. The result tag
 * {@code LEASES_CHECKPOINTED} (11) answers a checkpoint with its count of recorded sessions as an i32.
 *
 * <p>Version 5 (format level 5: token generations) is version 4 plus the command tag {@code SET_FORMAT_LEVEL} (13):
 * {@code level:u8}, answered by the result tag {@code FORMAT_LEVEL_SET} (12) with the level as an i32. The codec
 * writes a batch in the lowest version that holds it: version 4 unless it carries a tag of version 5. So a group at
 * format level 4, where the leader proposes nothing of level 5, writes only entries a peer of the previous release
 * reads, and a downgrade to it stays possible until the level is raised. It reads versions 1 to 5. Version 5 also
 * holds the command tag {@code REVOKE} (14): {@code lock:string, token:i64, revokedBy:string, lockDelay:bool},
 * answered by the result tag {@code REVOKED} (13): the revoked token, its session id as an i64, and the optional
 * next token; and the command tag {@code STORE_ENTRY} (15): {@code length:i32, length × u8}, an entry of the
 * replicated store in the store's own encoding, answered by the result tag {@code STORE_REPLY} (14) in the same
 * layout; and the command tag {@code RAISE_FLOOR} (16): {@code gap:i32}, answered by the result tag
 * {@code FLOOR_RAISED} (15) with the floor after it as an i64.
 *
 * <p>Version 1 (the previous release, before session secrets): the same frame, with OpenSession
 * {@code requestId, ttl}; CloseSession {@code sessionId}; Acquire {@code sessionId, lock, requestId, waitQueued};
 * CancelWait {@code sessionId, lock, requestId}; Release {@code lock, token}; ExpireSession and EndLockDelay as in
 * version 2. A server upgraded on its old data directory replays such entries from its Raft log, and they must
 * load: refusing them would leave deleting the data as the only way to start, which resets every lock's token
 * counter and breaks the first invariant (tokens strictly increase, across restarts, forever). They decode under
 * these rules, and why:
 * <ul>
 *   <li>A version-1 OpenSession opens a session with the identity {@link #VERSION_ONE_IDENTITY} (every caller of
 *       the previous release was anonymous: it had no client certificates) and the hash {@link SecretHash#NONE},
 *       which no presented secret matches. Nobody can act for such a session any more: its keepalives and commands
 *       are refused SESSION_UNAUTHENTICATED, so it expires at the end of its lease (a new leader first gives every
 *       session now + ttl) and its locks pass to their next waiters, or are freed, with higher tokens. Its clients
 *       open new sessions; no secret is invented for the old one, since none was ever handed to them.</li>
 *   <li>Every other version-1 command carries {@link SecretHash#NOT_CARRIED} (and Release the session id 0), and
 *       the state machine applies it exactly as the previous release did: no secret check, and Release by the
 *       holder's current token from whichever session. These commands were accepted by the old leader before the
 *       upgrade and are in the log for good; the state machine must be deterministic, so every replica replaying
 *       them must reach the same state as the old release did. Refusing them would make a replica's state depend
 *       on whether it applied the entry before or after its own upgrade. The check they skip cannot be had
 *       anyway: they name no secret, and their sessions have none.</li>
 *   <li>Nothing new is ever written as version 1: the leader proposes version 2 only, and encoding a command that
 *       holds {@link SecretHash#NOT_CARRIED} fails, so only entries already in the log take the old rules.</li>
 * </ul>
 * Results are never persisted and have no version 1 to read (see below).
 *
 * <p>A rejected result is its error's {@link ErrorFields}, every component in the record's order: the reason's
 * name, then message, field, value and limit as strings, limitValue and sessionId as i64, lock as a string,
 * presentedToken and currentToken as i64, then leaderAddress, policy (a {@link FencePolicy} name, or null), why,
 * identity and permission as strings. It decodes through {@link ErrorFields#toException()} to the same exception
 * type with equal fields. Only the reasons the state machine rejects with are written or read; any other is
 * refused as a bug (encoding) or as garbage (decoding).
 *
 * <p>Results are never persisted: the leader's state machine encodes them as the reply to a log entry, and the
 * proposer in the same process decodes them (Ratis keeps replies in memory only; snapshots hold the state, not
 * results). Their layout may therefore change without a new version; the version byte is there for the commands,
 * which the Raft log keeps.
 *
 * <p>Lock names: a lock name decoded from a log entry or a reply is checked once, as it is decoded
 * ({@link LockName#fromUtf8}), and carried on as a {@link LockName}: the commands, the state machine and the
 * tokens it issues do not check it again. The check stays although our own leader wrote the entry from names it
 * had checked, because the entry is bytes from disk or from another peer: Ratis's checksum of each log entry
 * catches corruption, not an entry written by an older or buggy encoder, and a name that breaks the rules would
 * reach resources in tokens. It costs little: an ASCII name is checked in the very loop that decodes it (the one
 * pass the decoder made before); another name is decoded strictly, then checked. A name is written from a
 * {@link LockName} or a token, so it has no unpaired surrogate and takes the plain encoder at once.
 */
public final class CommandCodec {
    /** The highest version this codec reads and writes (a batch with a command of format level 5). */
    public static final int VERSION = 5;
    /** The version of a batch without a command of version 5: what the previous release reads. */
    public static final int VERSION_FOUR = 4;
    /** The version of encoded results, which are never persisted nor sent to another peer. */
    private static final int RESULTS_VERSION = 4;
    /** The version before quotas and lease checkpoints: read, never written. */
    static final int VERSION_THREE = 3;
    /** The version before read-write locks: read, never written. */
    static final int VERSION_TWO = 2;
    /** The version of the previous release, before session secrets: read, never written. */
    static final int VERSION_ONE = 1;
    /**
     * The identity of a session opened by a version-1 command or restored from a version-1 snapshot: the
     * identity this release gives every caller without a client certificate, which every caller of the previous
     * release was.
     */
    public static final String VERSION_ONE_IDENTITY = "anonymous";

    private static final int OPEN_SESSION = 1;
    private static final int CLOSE_SESSION = 2;
    private static final int EXPIRE_SESSION = 3;
    private static final int ACQUIRE = 4;
    private static final int CANCEL_WAIT = 5;
    private static final int RELEASE = 6;
    private static final int END_LOCK_DELAY = 7;
    /** Since version 3: an Acquire with its mode. */
    private static final int ACQUIRE_IN_MODE = 8;
    /** Since version 3: an acquire of a semaphore's permit. */
    private static final int ACQUIRE_PERMIT = 9;
    /** Since version 3: a multi-lock. */
    private static final int ACQUIRE_ALL = 10;
    /** Since version 4: an OpenSession with a quota identity other than its identity. */
    private static final int OPEN_SESSION_FOR = 11;
    /** Since version 4: a lease checkpoint. */
    private static final int CHECKPOINT_LEASES = 12;
    /** Since version 5. */
    private static final int SET_FORMAT_LEVEL = 13;
    /** Since version 5: an operator's revoke. */
    private static final int REVOKE = 14;
    /** Since version 5: an entry of the replicated store. */
    private static final int STORE_ENTRY = 15;
    /** Since version 5: the leader's lift of the floor. */
    private static final int RAISE_FLOOR = 16;

    private static final int SESSION_OPENED = 1;
    private static final int SESSION_ENDED = 2;
    private static final int GRANTED = 3;
    private static final int QUEUED = 4;
    private static final int BUSY = 5;
    private static final int WAIT_CANCELLED = 6;
    private static final int RELEASED = 7;
    private static final int DELAY_ENDED = 8;
    private static final int REJECTED = 9;
    private static final int GRANTED_ALL = 10;
    private static final int LEASES_CHECKPOINTED = 11;
    private static final int FORMAT_LEVEL_SET = 12;
    private static final int REVOKED = 13;
    private static final int STORE_REPLY = 14;
    private static final int FLOOR_RAISED = 15;

    /** The reasons the lock state machine rejects commands with; the codec refuses every other as a bug. */
    private static final Set<ErrorReason> REJECTION_REASONS = Collections.unmodifiableSet(EnumSet.of(
            ErrorReason.INVALID_ARGUMENT, ErrorReason.LIMIT_EXCEEDED, ErrorReason.SESSION_EXPIRED,
            ErrorReason.SESSION_UNAUTHENTICATED, ErrorReason.NOT_HOLDER, ErrorReason.TOKEN_EXHAUSTED));

    /** The fewest bytes one encoded command or result takes: its tag. */
    private static final int ITEM_BYTES_MIN = 1;
    /** The fewest bytes one encoded token takes: a string length, one name byte and a value. */
    private static final int TOKEN_BYTES_MIN = 4 + 1 + 8 + 1;

    private CommandCodec() {}

    public static byte[] encodeCommands(List<Command> commands) {
        Objects.requireNonNull(commands, "commands");
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeByte(version(commands));
            out.writeInt(commands.size());
            for (Command command : commands) {
                writeCommand(out, Objects.requireNonNull(command, "command"));
            }
        } catch (IOException e) {
            throw new UncheckedIOException("writing to memory failed", e);
        }
        return bytes.toByteArray();
    }

    /** Returns the lowest version that holds {@code commands}: 4 unless one is of version 5. */
    private static int version(List<Command> commands) {
        for (Command command : commands) {
            if (command instanceof Command.SetFormatLevel || command instanceof Command.Revoke
                    || command instanceof Command.StoreEntry || command instanceof Command.RaiseFloor) {
                return VERSION;
            }
        }
        return VERSION_FOUR;
    }

    private static void writeCommand(DataOutputStream out, Command command) throws IOException {
        if (command instanceof Command.SetFormatLevel set) {
            out.writeByte(SET_FORMAT_LEVEL);
            out.writeByte(set.level());
        } else if (command instanceof Command.Revoke revoke) {
            out.writeByte(REVOKE);
            writeName(out, revoke.lockName());
            out.writeLong(revoke.token());
            writeString(out, revoke.revokedBy());
            out.writeBoolean(revoke.lockDelay());
        } else if (command instanceof Command.RaiseFloor raise) {
            out.writeByte(RAISE_FLOOR);
            out.writeInt(raise.gap());
        } else if (command instanceof Command.StoreEntry store) {
            out.writeByte(STORE_ENTRY);
            out.writeInt(store.entry().length);
            out.write(store.entry());
        } else if (command instanceof Command.OpenSession open) {
            writeOpenSession(out, open);
        } else if (command instanceof Command.CheckpointLeases checkpoint) {
            writeCheckpoint(out, checkpoint);
        } else if (command instanceof Command.CloseSession close) {
            out.writeByte(CLOSE_SESSION);
            out.writeLong(close.sessionId());
            writeSecretHash(out, close.secretHash());
        } else if (command instanceof Command.ExpireSession expire) {
            out.writeByte(EXPIRE_SESSION);
            out.writeLong(expire.sessionId());
            out.writeBoolean(expire.lockDelay());
        } else if (command instanceof Command.Acquire acquire) {
            writeAcquire(out, acquire);
        } else if (command instanceof Command.CancelWait cancel) {
            out.writeByte(CANCEL_WAIT);
            out.writeLong(cancel.sessionId());
            writeSecretHash(out, cancel.secretHash());
            writeName(out, cancel.lockName());
            writeString(out, cancel.requestId());
        } else if (command instanceof Command.Release release) {
            out.writeByte(RELEASE);
            out.writeLong(release.sessionId());
            writeSecretHash(out, release.secretHash());
            writeName(out, release.lockName());
            out.writeLong(release.token());
        } else if (command instanceof Command.EndLockDelay end) {
            out.writeByte(END_LOCK_DELAY);
            writeName(out, end.lockName());
        } else if (command instanceof Command.AcquireAll all) {
            writeAcquireAll(out, all);
        } else if (command instanceof Command.AcquirePermit permit) {
            writeAcquirePermit(out, permit);
        } else {
            throw new IllegalArgumentException("unknown command type " + command.getClass().getName());
        }
    }

    /** Writes an Acquire: tag 4 when exclusive, or the tag of an Acquire in a mode, followed by the mode. */
    private static void writeAcquire(DataOutputStream out, Command.Acquire acquire) throws IOException {
        out.writeByte(acquire.mode() == LockMode.EXCLUSIVE ? ACQUIRE : ACQUIRE_IN_MODE);
        out.writeLong(acquire.sessionId());
        writeSecretHash(out, acquire.secretHash());
        writeName(out, acquire.lockName());
        writeString(out, acquire.requestId());
        out.writeBoolean(acquire.waitQueued());
        if (acquire.mode() != LockMode.EXCLUSIVE) {
            out.writeByte(acquire.mode().ordinal());
        }
    }

    private static void writeAcquireAll(DataOutputStream out, Command.AcquireAll all) throws IOException {
        out.writeByte(ACQUIRE_ALL);
        out.writeLong(all.sessionId());
        writeSecretHash(out, all.secretHash());
        out.writeInt(all.lockNames().size());
        for (LockName name : all.lockNames()) {
            writeName(out, name);
        }
        writeString(out, all.requestId());
        out.writeBoolean(all.waitQueued());
    }

    private static void writeAcquirePermit(DataOutputStream out, Command.AcquirePermit permit) throws IOException {
        out.writeByte(ACQUIRE_PERMIT);
        out.writeLong(permit.sessionId());
        writeSecretHash(out, permit.secretHash());
        writeName(out, permit.semaphoreName());
        out.writeInt(permit.permits());
        writeString(out, permit.requestId());
        out.writeBoolean(permit.waitQueued());
    }

    /** Writes an OpenSession: tag 1, or tag 11 with its quota identity when that is not its identity. */
    private static void writeOpenSession(DataOutputStream out, Command.OpenSession open) throws IOException {
        boolean ownQuota = open.quotaIdentity().equals(open.identity());
        out.writeByte(ownQuota ? OPEN_SESSION : OPEN_SESSION_FOR);
        writeString(out, open.requestId());
        out.writeLong(open.ttlMillis());
        writeString(out, open.identity());
        writeSecretHash(out, open.secretHash());
        if (!ownQuota) {
            writeString(out, open.quotaIdentity());
        }
    }

    private static void writeCheckpoint(DataOutputStream out, Command.CheckpointLeases checkpoint)
            throws IOException {
        out.writeByte(CHECKPOINT_LEASES);
        out.writeInt(checkpoint.checkpoints().size());
        for (Command.LeaseCheckpoint entry : checkpoint.checkpoints()) {
            out.writeLong(entry.sessionId());
            out.writeLong(entry.remainingMillis());
        }
    }

    /** Writes a hash's 32 bytes; a version-1 command's absent hash is refused, never written as version 2. */
    private static void writeSecretHash(DataOutputStream out, SecretHash hash) throws IOException {
        if (hash == SecretHash.NOT_CARRIED) {
            throw new IllegalArgumentException("a command decoded from a version-1 log entry carries no secret hash:"
                    + " it is applied as decoded, never written again");
        }
        out.write(hash.bytes());
    }

    /** Decodes a command batch of versions 2 to 4, or of version 1 under the rules in the class doc. */
    public static List<Command> decodeCommands(byte[] bytes) {
        Objects.requireNonNull(bytes, "bytes");
        ByteReader in = new ByteReader(bytes, "command batch");
        int version = in.readByte("version");
        if (version < VERSION_ONE || version > VERSION) {
            throw in.malformed("unsupported version " + version + ", expected " + VERSION + " (or " + VERSION_FOUR
                    + ", " + VERSION_THREE + ", " + VERSION_TWO + " or " + VERSION_ONE + ", of earlier releases)");
        }
        int count = in.readCount("commands", ITEM_BYTES_MIN);
        List<Command> commands = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            int start = in.offset();
            try {
                commands.add(version == VERSION_ONE ? readVersionOneCommand(in) : readCommand(in, version));
            } catch (FencerException e) {
                // A record's own validation (lock name, request id) refused the decoded fields.
                throw new IllegalArgumentException("malformed command batch: command " + i + " at byte " + start
                        + " is invalid: " + e.getMessage(), e);
            }
        }
        in.expectEnd();
        return commands;
    }

    private static Command readCommand(ByteReader in, int version) {
        int tag = in.readByte("command tag");
        switch (tag) {
            case SET_FORMAT_LEVEL:
                requireVersion(in, tag, version, VERSION);
                return new Command.SetFormatLevel(in.readByte("format level"));
            case REVOKE:
                requireVersion(in, tag, version, VERSION);
                return new Command.Revoke(in.readLockName("lock"), in.readLong("token"),
                        in.readRequiredString("revoked by"), in.readBoolean("lock delay"));
            case STORE_ENTRY:
                requireVersion(in, tag, version, VERSION);
                return new Command.StoreEntry(in.readBytes(in.readCount("store entry bytes", 1), "store entry"));
            case RAISE_FLOOR:
                requireVersion(in, tag, version, VERSION);
                return new Command.RaiseFloor(in.readInt("gap"));
            case OPEN_SESSION_FOR:
                requireVersion(in, tag, version, VERSION_FOUR);
                return new Command.OpenSession(in.readRequiredString("request id"), in.readLong("ttl"),
                        in.readRequiredString("identity"), readSecretHash(in), in.readRequiredString("quota identity"));
            case CHECKPOINT_LEASES:
                requireVersion(in, tag, version, VERSION_FOUR);
                return readCheckpoint(in);
            case ACQUIRE_ALL:
                if (version < VERSION_THREE) {
                    throw in.malformed("command tag " + tag + " is not in version " + version);
                }
                return readAcquireAll(in);
            case ACQUIRE_PERMIT:
                if (version < VERSION_THREE) {
                    throw in.malformed("command tag " + tag + " is not in version " + version);
                }
                return new Command.AcquirePermit(in.readLong("session id"), readSecretHash(in),
                        in.readLockName("semaphore"), in.readInt("permits"), in.readRequiredString("request id"),
                        in.readBoolean("wait queued"));
            case ACQUIRE_IN_MODE:
                if (version < VERSION_THREE) {
                    throw in.malformed("command tag " + tag + " is not in version " + version);
                }
                return new Command.Acquire(in.readLong("session id"), readSecretHash(in), in.readLockName("lock"),
                        in.readRequiredString("request id"), in.readBoolean("wait queued"), readMode(in));
            case OPEN_SESSION:
                return new Command.OpenSession(in.readRequiredString("request id"), in.readLong("ttl"),
                        in.readRequiredString("identity"), readSecretHash(in));
            case CLOSE_SESSION:
                return new Command.CloseSession(in.readLong("session id"), readSecretHash(in));
            case EXPIRE_SESSION:
                return new Command.ExpireSession(in.readLong("session id"), in.readBoolean("lock delay"));
            case ACQUIRE:
                return new Command.Acquire(in.readLong("session id"), readSecretHash(in), in.readLockName("lock"),
                        in.readRequiredString("request id"), in.readBoolean("wait queued"));
            case CANCEL_WAIT:
                return new Command.CancelWait(in.readLong("session id"), readSecretHash(in), in.readLockName("lock"),
                        in.readString("request id"));
            case RELEASE:
                return new Command.Release(in.readLong("session id"), readSecretHash(in), in.readLockName("lock"),
                        in.readLong("token"));
            case END_LOCK_DELAY:
                return new Command.EndLockDelay(in.readLockName("lock"));
            default:
                throw in.malformed("unknown command tag " + tag);
        }
    }

    /** Reads a command in the previous release's layout; see the class doc for what its fields become. */
    private static Command readVersionOneCommand(ByteReader in) {
        int tag = in.readByte("command tag");
        SecretHash notCarried = SecretHash.NOT_CARRIED;
        switch (tag) {
            case OPEN_SESSION:
                return new Command.OpenSession(in.readRequiredString("request id"), in.readLong("ttl"),
                        VERSION_ONE_IDENTITY, SecretHash.NONE);
            case CLOSE_SESSION:
                return new Command.CloseSession(in.readLong("session id"), notCarried);
            case EXPIRE_SESSION:
                return new Command.ExpireSession(in.readLong("session id"), in.readBoolean("lock delay"));
            case ACQUIRE:
                return new Command.Acquire(in.readLong("session id"), notCarried, in.readLockName("lock"),
                        in.readRequiredString("request id"), in.readBoolean("wait queued"));
            case CANCEL_WAIT:
                return new Command.CancelWait(in.readLong("session id"), notCarried, in.readLockName("lock"),
                        in.readString("request id"));
            case RELEASE:
                // Version 1 released by token alone: session id 0 (never a session's) says so to the state machine.
                return new Command.Release(0, notCarried, in.readLockName("lock"), in.readLong("token"));
            case END_LOCK_DELAY:
                return new Command.EndLockDelay(in.readLockName("lock"));
            default:
                throw in.malformed("unknown command tag " + tag);
        }
    }

    private static void requireVersion(ByteReader in, int tag, int version, int since) {
        if (version < since) {
            throw in.malformed("command tag " + tag + " is not in version " + version);
        }
    }

    private static Command.CheckpointLeases readCheckpoint(ByteReader in) {
        int count = in.readCount("lease checkpoints", 16);
        List<Command.LeaseCheckpoint> checkpoints = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            checkpoints.add(new Command.LeaseCheckpoint(in.readLong("session id"), in.readLong("remaining millis")));
        }
        return new Command.CheckpointLeases(checkpoints);
    }

    private static Command.AcquireAll readAcquireAll(ByteReader in) {
        long sessionId = in.readLong("session id");
        SecretHash hash = readSecretHash(in);
        int count = in.readCount("multi-lock locks", TOKEN_BYTES_MIN - 8 - 1);
        List<LockName> names = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            names.add(in.readLockName("lock"));
        }
        return new Command.AcquireAll(sessionId, hash, names, in.readRequiredString("request id"),
                in.readBoolean("wait queued"));
    }

    private static LockMode readMode(ByteReader in) {
        int mode = in.readByte("mode");
        if (mode >= LockMode.values().length) {
            throw in.malformed("unknown lock mode " + mode);
        }
        return LockMode.values()[mode];
    }

    private static SecretHash readSecretHash(ByteReader in) {
        return SecretHash.fromBytes(in.readBytes(SecretHash.BYTES, "secret hash"));
    }

    public static byte[] encodeResults(List<Result> results) {
        Objects.requireNonNull(results, "results");
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeByte(RESULTS_VERSION);
            out.writeInt(results.size());
            for (Result result : results) {
                writeResult(out, Objects.requireNonNull(result, "result"));
            }
        } catch (IOException e) {
            throw new UncheckedIOException("writing to memory failed", e);
        }
        return bytes.toByteArray();
    }

    private static void writeResult(DataOutputStream out, Result result) throws IOException {
        if (result instanceof Result.SessionOpened opened) {
            out.writeByte(SESSION_OPENED);
            out.writeLong(opened.sessionId());
            out.writeLong(opened.ttlMillis());
        } else if (result instanceof Result.SessionEnded ended) {
            out.writeByte(SESSION_ENDED);
            out.writeLong(ended.sessionId());
            out.writeInt(ended.released().size());
            for (FencingToken token : ended.released()) {
                writeToken(out, token);
            }
        } else if (result instanceof Result.Granted granted) {
            out.writeByte(GRANTED);
            writeToken(out, Objects.requireNonNull(granted.token(), "granted token"));
        } else if (result instanceof Result.GrantedAll all) {
            out.writeByte(GRANTED_ALL);
            out.writeInt(all.tokens().size());
            for (FencingToken token : all.tokens()) {
                writeToken(out, token);
            }
        } else if (result instanceof Result.Queued queued) {
            out.writeByte(QUEUED);
            writeString(out, queued.lock());
            out.writeInt(queued.position());
        } else if (result instanceof Result.Busy busy) {
            out.writeByte(BUSY);
            writeString(out, busy.lock());
            writeOptionalToken(out, busy.holder());
        } else if (result instanceof Result.WaitCancelled cancelled) {
            out.writeByte(WAIT_CANCELLED);
            out.writeBoolean(cancelled.removed());
        } else if (result instanceof Result.Released released) {
            out.writeByte(RELEASED);
            writeToken(out, Objects.requireNonNull(released.released(), "released token"));
            writeOptionalToken(out, released.next());
        } else if (result instanceof Result.Revoked revoked) {
            out.writeByte(REVOKED);
            writeToken(out, Objects.requireNonNull(revoked.revoked(), "revoked token"));
            out.writeLong(revoked.sessionId());
            writeOptionalToken(out, revoked.next());
        } else if (result instanceof Result.DelayEnded delayEnded) {
            out.writeByte(DELAY_ENDED);
            writeString(out, delayEnded.lock());
            out.writeBoolean(delayEnded.ended());
            writeOptionalToken(out, delayEnded.next());
        } else if (result instanceof Result.LeasesCheckpointed checkpointed) {
            out.writeByte(LEASES_CHECKPOINTED);
            out.writeInt(checkpointed.recorded());
        } else if (result instanceof Result.FormatLevelSet set) {
            out.writeByte(FORMAT_LEVEL_SET);
            out.writeInt(set.level());
        } else if (result instanceof Result.FloorRaised raised) {
            out.writeByte(FLOOR_RAISED);
            out.writeLong(raised.floor());
        } else if (result instanceof Result.StoreReply reply) {
            out.writeByte(STORE_REPLY);
            out.writeInt(reply.reply().length);
            out.write(reply.reply());
        } else if (result instanceof Result.Rejected rejected) {
            out.writeByte(REJECTED);
            writeError(out, Objects.requireNonNull(rejected.error(), "rejected error"));
        } else {
            throw new IllegalArgumentException("unknown result type " + result.getClass().getName());
        }
    }

    private static void writeError(DataOutputStream out, FencerException error) throws IOException {
        if (!REJECTION_REASONS.contains(error.reason())) {
            // The state machine rejects only with these reasons; anything else is a programming error.
            throw new IllegalArgumentException("the lock state machine never rejects with "
                    + error.getClass().getName() + ": " + error.getMessage());
        }
        ErrorFields fields = ErrorFields.of(error);
        writeString(out, fields.reason().name());
        writeString(out, fields.message());
        writeString(out, fields.field());
        writeString(out, fields.value());
        writeString(out, fields.limit());
        out.writeLong(fields.limitValue());
        out.writeLong(fields.sessionId());
        writeString(out, fields.lock());
        out.writeLong(fields.presentedToken());
        out.writeLong(fields.currentToken());
        writeString(out, fields.leaderAddress());
        writeString(out, fields.policy() == null ? null : fields.policy().name());
        writeString(out, fields.why());
        writeString(out, fields.identity());
        writeString(out, fields.permission());
    }

    public static List<Result> decodeResults(byte[] bytes) {
        ByteReader in = open(bytes, "result batch");
        int count = in.readCount("results", ITEM_BYTES_MIN);
        List<Result> results = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            int start = in.offset();
            try {
                results.add(readResult(in));
            } catch (FencerException e) {
                throw new IllegalArgumentException("malformed result batch: result " + i + " at byte " + start
                        + " is invalid: " + e.getMessage(), e);
            }
        }
        in.expectEnd();
        return results;
    }

    private static Result readResult(ByteReader in) {
        int tag = in.readByte("result tag");
        switch (tag) {
            case SESSION_OPENED:
                return new Result.SessionOpened(in.readLong("session id"), in.readLong("ttl"));
            case SESSION_ENDED:
                long sessionId = in.readLong("session id");
                int count = in.readCount("released tokens", TOKEN_BYTES_MIN);
                List<FencingToken> released = new ArrayList<>(count);
                for (int i = 0; i < count; i++) {
                    released.add(readToken(in));
                }
                return new Result.SessionEnded(sessionId, released);
            case GRANTED:
                return new Result.Granted(readToken(in));
            case GRANTED_ALL:
                int tokens = in.readCount("granted tokens", TOKEN_BYTES_MIN);
                List<FencingToken> granted = new ArrayList<>(tokens);
                for (int i = 0; i < tokens; i++) {
                    granted.add(readToken(in));
                }
                return new Result.GrantedAll(granted);
            case QUEUED:
                return new Result.Queued(in.readRequiredString("lock"), in.readInt("position"));
            case BUSY:
                return new Result.Busy(in.readRequiredString("lock"), readOptionalToken(in));
            case WAIT_CANCELLED:
                return new Result.WaitCancelled(in.readBoolean("removed"));
            case RELEASED:
                return new Result.Released(readToken(in), readOptionalToken(in));
            case REVOKED:
                return new Result.Revoked(readToken(in), in.readLong("session id"), readOptionalToken(in));
            case DELAY_ENDED:
                return new Result.DelayEnded(in.readRequiredString("lock"), in.readBoolean("ended"),
                        readOptionalToken(in));
            case LEASES_CHECKPOINTED:
                return new Result.LeasesCheckpointed(in.readInt("recorded"));
            case FORMAT_LEVEL_SET:
                return new Result.FormatLevelSet(in.readInt("format level"));
            case FLOOR_RAISED:
                return new Result.FloorRaised(in.readLong("floor"));
            case STORE_REPLY:
                return new Result.StoreReply(in.readBytes(in.readCount("store reply bytes", 1), "store reply"));
            case REJECTED:
                return new Result.Rejected(readError(in));
            default:
                throw in.malformed("unknown result tag " + tag);
        }
    }

    private static FencerException readError(ByteReader in) {
        ErrorReason reason = readReason(in);
        // Arguments are read in order: the same order writeError wrote them in.
        ErrorFields fields = new ErrorFields(reason, in.readString("message"), in.readString("field"),
                in.readString("value"), in.readString("limit"), in.readLong("limit value"), in.readLong("session id"),
                in.readString("lock"), in.readLong("presented token"), in.readLong("current token"),
                in.readString("leader address"), readPolicy(in), in.readString("why"), in.readString("identity"),
                in.readString("permission"));
        return fields.toException();
    }

    private static ErrorReason readReason(ByteReader in) {
        String name = in.readRequiredString("error reason");
        for (ErrorReason reason : REJECTION_REASONS) {
            if (reason.name().equals(name)) {
                return reason;
            }
        }
        throw in.malformed("error reason '" + InvalidArgumentException.printable(name)
                + "' is not one the lock state machine rejects with");
    }

    private static FencePolicy readPolicy(ByteReader in) {
        String name = in.readString("policy");
        if (name == null) {
            return null;
        }
        for (FencePolicy policy : FencePolicy.values()) {
            if (policy.name().equals(name)) {
                return policy;
            }
        }
        throw in.malformed("unknown policy '" + InvalidArgumentException.printable(name) + "'");
    }

    private static ByteReader open(byte[] bytes, String what) {
        Objects.requireNonNull(bytes, "bytes");
        ByteReader in = new ByteReader(bytes, what);
        int version = in.readByte("version");
        if (version != RESULTS_VERSION) {
            throw in.malformed("unsupported version " + version + ", expected " + RESULTS_VERSION);
        }
        return in;
    }

    /** Writes a token of a result: its lock, value and mode (results are never persisted, see above). */
    private static void writeToken(DataOutputStream out, FencingToken token) throws IOException {
        writeCheckedName(out, token.lock());
        out.writeLong(token.value());
        out.writeByte(token.mode().ordinal());
    }

    private static void writeOptionalToken(DataOutputStream out, FencingToken token) throws IOException {
        out.writeBoolean(token != null);
        if (token != null) {
            writeToken(out, token);
        }
    }

    private static FencingToken readToken(ByteReader in) {
        return FencingToken.of(in.readLockName("token lock"), in.readLong("token value"), readMode(in));
    }

    private static FencingToken readOptionalToken(ByteReader in) {
        return in.readBoolean("token present") ? readToken(in) : null;
    }

    private static void writeName(DataOutputStream out, LockName name) throws IOException {
        writeCheckedName(out, name.value());
    }

    /** Writes a name known to be valid (it has no unpaired surrogate), as {@link #writeString} would. */
    private static void writeCheckedName(DataOutputStream out, String name) throws IOException {
        byte[] plain = name.getBytes(StandardCharsets.UTF_8);
        writeStringBytes(out, plain, 0, plain.length);
    }

    /** Writes a length-prefixed strict UTF-8 string, -1 for null; refuses what the reader would refuse. */
    private static void writeString(DataOutputStream out, String text) throws IOException {
        if (text == null) {
            out.writeInt(-1);
            return;
        }
        if (!hasSurrogate(text)) {
            // Without surrogates every string is valid UTF-16, so the plain (intrinsic) encoding is exact and the
            // strict encoder below, with its allocations per string, is only needed to refuse unpaired ones.
            byte[] plain = text.getBytes(StandardCharsets.UTF_8);
            writeStringBytes(out, plain, 0, plain.length);
            return;
        }
        ByteBuffer encoded;
        try {
            encoded = StandardCharsets.UTF_8.newEncoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .encode(CharBuffer.wrap(text));
        } catch (CharacterCodingException e) {
            throw new IllegalArgumentException("string is not valid UTF-8 (unpaired surrogate): '"
                    + InvalidArgumentException.printable(text) + "'", e);
        }
        writeStringBytes(out, encoded.array(), encoded.arrayOffset() + encoded.position(), encoded.remaining());
    }

    private static void writeStringBytes(DataOutputStream out, byte[] bytes, int offset, int length)
            throws IOException {
        if (length > ByteReader.STRING_BYTES_MAX) {
            throw new IllegalArgumentException("string of " + length + " UTF-8 bytes exceeds the "
                    + ByteReader.STRING_BYTES_MAX + " the codec allows");
        }
        out.writeInt(length);
        out.write(bytes, offset, length);
    }

    private static boolean hasSurrogate(String text) {
        for (int i = 0; i < text.length(); i++) {
            if (Character.isSurrogate(text.charAt(i))) {
                return true;
            }
        }
        return false;
    }
}
