package io.fencer.lock;

import io.fencer.core.FencingToken;
import io.fencer.core.InvalidArgumentException;
import java.util.Objects;

/**
 * The rules a decoded {@link Command} must meet beyond what its record's constructor checks: the ids its kind
 * requires (a session id of an open session is at least 1; a command acting for a session carries the hash of a
 * secret) and the values in range (a session's ttl, a semaphore's permits, a released token). Two uses:
 * <ul>
 *   <li>{@link #checkProposal} on the leader, before a command is proposed: a command that breaks a rule is refused
 *       to its caller with INVALID_ARGUMENT and never reaches the log.</li>
 *   <li>{@link #checkApplied} on every replica, for a command decoded from a log entry: the state machine applies a
 *       command that breaks a rule as a no-op (a {@link Result.Rejected} result, no state change).</li>
 * </ul>
 *
 * <p>Why the rules on apply may only be these: a replica on this release must reach the state a replica on an
 * earlier release reached from the same log, or the two diverge during a rolling upgrade (and a restart that replays
 * an older log would reach another state than the snapshot taken before it). Each rule of {@link #checkApplied}
 * refuses a command that every earlier release also applied without a state change (it was rejected, or named
 * nothing that exists: no session has an id below 1, no secret hashes to zero bytes, a ttl or permit count out of
 * range was rejected before anything changed). Refusing it as malformed changes its result, never the state. The
 * rules that could change the state if applied the old way (an OpenSession without a secret hash opens a session)
 * are checked on the leader only, where they keep new entries clean. Version-1 commands, decoded from a previous
 * release's log, carry no secret hash (and Release the session id 0): they pass, as {@link CommandCodec} explains.
 */
public final class CommandChecks {
    private CommandChecks() {}

    /**
     * Checks a command the leader is about to propose: every rule of {@link #checkApplied}, and those that only new
     * commands must meet (an OpenSession carries the hash of the secret the leader drew; a RaiseFloor's gap is in
     * [1, {@link Command.RaiseFloor#GAP_MAX}]; nothing carries the absent hash of a version-1 command, which is never
     * written).
     *
     * @throws InvalidArgumentException naming the field, the value and the rule broken
     */
    public static void checkProposal(Command command, Limits limits) {
        checkApplied(command, limits);
        if (command instanceof Command.OpenSession open && open.secretHash() == SecretHash.NONE) {
            throw new InvalidArgumentException("secret_hash", "", "an OpenSession must carry the hash of the secret"
                    + " drawn for the session, not the hash of none (nobody could ever act for the session)");
        }
        if (command instanceof Command.RaiseFloor raise
                && (raise.gap() < 1 || raise.gap() > Command.RaiseFloor.GAP_MAX)) {
            // Checked on the leader only: a later release may allow more, and a replica must apply what it wrote.
            throw new InvalidArgumentException("gap", Integer.toString(raise.gap()), "a RaiseFloor with gap "
                    + raise.gap() + " is outside [1, " + Command.RaiseFloor.GAP_MAX + "]");
        }
        if (secretHash(command) == SecretHash.NOT_CARRIED) {
            throw new InvalidArgumentException("secret_hash", "", kind(command) + " without a secret hash is"
                    + " a version-1 command: it is applied from an earlier release's log, never proposed");
        }
    }

    /**
     * Checks a command decoded from a log entry; see the class doc for why these rules and no others.
     *
     * @throws InvalidArgumentException naming the field, the value and the rule broken
     */
    public static void checkApplied(Command command, Limits limits) {
        Objects.requireNonNull(command, "command");
        Objects.requireNonNull(limits, "limits");
        SecretHash hash = secretHash(command);
        long sessionId = sessionId(command);
        boolean versionOne = hash == SecretHash.NOT_CARRIED;
        if (sessionId < 1 && !(versionOne && command instanceof Command.Release)) {
            throw new InvalidArgumentException("session_id", Long.toString(sessionId), kind(command)
                    + " names session " + sessionId + ": session ids are at least 1");
        }
        if (hash == SecretHash.NONE && !(command instanceof Command.OpenSession)) {
            throw new InvalidArgumentException("secret_hash", "", kind(command) + " for session " + sessionId
                    + " carries no secret hash (zero bytes): it acts for a session, so it carries its caller's");
        }
        if (command instanceof Command.OpenSession open) {
            limits.checkTtlMillis(open.ttlMillis());
        } else if (command instanceof Command.AcquirePermit permit) {
            Limits.checkPermits(permit.semaphore(), permit.permits());
        } else if (command instanceof Command.Release release
                && (release.token() < 1 || release.token() > FencingToken.VALUE_MAX)) {
            throw new InvalidArgumentException("token", Long.toString(release.token()), "Release of lock '"
                    + InvalidArgumentException.printable(release.lock()) + "' names token " + release.token()
                    + ": tokens are in [1, " + FencingToken.VALUE_MAX + "]");
        }
    }

    /** Returns the session a command names, or {@link Long#MAX_VALUE} for a command that names none. */
    private static long sessionId(Command command) {
        if (command instanceof Command.CloseSession close) {
            return close.sessionId();
        } else if (command instanceof Command.ExpireSession expire) {
            return expire.sessionId();
        } else if (command instanceof Command.Acquire acquire) {
            return acquire.sessionId();
        } else if (command instanceof Command.CancelWait cancel) {
            return cancel.sessionId();
        } else if (command instanceof Command.Release release) {
            return release.sessionId();
        } else if (command instanceof Command.AcquirePermit permit) {
            return permit.sessionId();
        } else if (command instanceof Command.AcquireAll all) {
            return all.sessionId();
        }
        return Long.MAX_VALUE; // OpenSession (the state machine draws the id) and EndLockDelay name no session
    }

    /** Returns the secret hash a command carries, or null for a command that carries none (the leader's own). */
    private static SecretHash secretHash(Command command) {
        if (command instanceof Command.OpenSession open) {
            return open.secretHash();
        } else if (command instanceof Command.CloseSession close) {
            return close.secretHash();
        } else if (command instanceof Command.Acquire acquire) {
            return acquire.secretHash();
        } else if (command instanceof Command.CancelWait cancel) {
            return cancel.secretHash();
        } else if (command instanceof Command.Release release) {
            return release.secretHash();
        } else if (command instanceof Command.AcquirePermit permit) {
            return permit.secretHash();
        } else if (command instanceof Command.AcquireAll all) {
            return all.secretHash();
        }
        return null; // ExpireSession and EndLockDelay: the leader decides them and acts for no client
    }

    private static String kind(Command command) {
        return command.getClass().getSimpleName();
    }
}
