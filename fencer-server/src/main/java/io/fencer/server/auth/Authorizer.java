package io.fencer.server.auth;

import io.fencer.core.PermissionDeniedException;
import io.fencer.server.rpc.Identities;
import java.nio.file.Path;
import java.util.Objects;
import java.util.OptionalInt;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Decides whether the caller of the call being served may make it: the one permission check of the lock and store
 * services, called at the top of each handler (unary and pipelined calls reach the same handlers), after the
 * request's fields are validated and before anything is proposed, read or written. A refusal is a
 * {@link PermissionDeniedException} naming the identity, the permission and the name.
 *
 * <p>The caller is {@link Identities#current()}: a client certificate's CN, or {@code anonymous}. Without an ACL
 * file every caller may do everything. With one, only what its rules grant ({@link Acl}); the file can be read
 * again while serving ({@link #reload()}), and a file that does not parse leaves the rules in force unchanged.
 * Thread-safe: checks read one immutable {@link Acl}, which a reload replaces whole.
 */
public final class Authorizer {
    private static final Logger LOG = LoggerFactory.getLogger(Authorizer.class);

    /** The ACL file, or null when every caller may do everything. */
    private final Path file;
    private volatile Acl acl;

    private Authorizer(Path file, Acl acl) {
        this.file = file;
        this.acl = acl;
    }

    /** Returns an authorizer without an ACL: every caller may make every call. */
    public static Authorizer allowingEveryone() {
        return new Authorizer(null, null);
    }

    /**
     * Returns an authorizer enforcing the ACL file at {@code file}.
     *
     * @throws AclFileException when the file cannot be read or does not parse
     */
    public static Authorizer fromFile(Path file) {
        Objects.requireNonNull(file, "file");
        Acl acl = AclFile.read(file);
        LOG.info("ACL {} in force: {} rules, {} identities", file, acl.ruleCount(), acl.identityCount());
        return new Authorizer(file, acl);
    }

    /**
     * Reads the ACL file again and puts its rules in force for the calls that start from now on. When the file
     * cannot be read or does not parse, the rules in force stay and the error is logged, naming the line.
     *
     * @return the rules now in force
     * @throws AclFileException when the file cannot be read or does not parse (the old rules stay)
     * @throws IllegalStateException when this authorizer has no ACL file
     */
    public synchronized Acl reload() {
        if (file == null) {
            throw new IllegalStateException("no ACL file to reload: the server was started without --acl");
        }
        Acl previous = acl;
        try {
            acl = AclFile.read(file);
        } catch (AclFileException e) {
            LOG.error("ACL reload failed; the {} rules read before stay in force: {}", previous.ruleCount(),
                    e.getMessage());
            throw e;
        }
        LOG.info("ACL {} reloaded: {} rules, {} identities (were {} rules)", file, acl.ruleCount(),
                acl.identityCount(), previous.ruleCount());
        return acl;
    }

    /** Returns whether an ACL file is enforced; false means every caller may do everything. */
    public boolean enforcing() {
        return file != null;
    }

    /**
     * Returns the value the ACL file sets for {@code quota} of {@code quotaIdentity}, if it sets one (see
     * {@link Acl#quota}); empty without an ACL file. Read at each check, so a reload applies to the next one.
     */
    public OptionalInt quota(String quotaIdentity, Quota quota) {
        Acl rules = acl;
        return rules == null ? OptionalInt.empty() : rules.quota(quotaIdentity, quota);
    }

    /**
     * Returns whether {@code identity} holds {@code needed} on {@code name}: for a page deciding what to offer (the
     * console's revoke buttons), never instead of {@link #check} in the call that acts.
     */
    public boolean allows(String identity, Permission needed, String name) {
        Acl rules = acl;
        return rules == null || rules.allows(identity, needed, name);
    }

    /**
     * Checks that the caller holds {@code needed} on {@code name}: a lock name or a store scope.
     *
     * @throws PermissionDeniedException when it does not
     */
    public void check(Permission needed, String name) {
        Acl rules = acl;
        if (rules == null) {
            return;
        }
        String identity = Identities.current();
        if (!rules.allows(identity, needed, name)) {
            throw new PermissionDeniedException(identity, needed.word(), name);
        }
    }

    /**
     * Checks that the caller holds {@code needed} on every name that starts with {@code prefix}: the check of a
     * List, which a rule must cover as a whole (its PREFIX begins {@code prefix}, or is {@code *}). The empty
     * prefix, every name, is named {@code *} in the refusal.
     *
     * @throws PermissionDeniedException when it does not
     */
    public void checkPrefix(Permission needed, String prefix) {
        if (acl != null) {
            checkPrefix(Identities.current(), needed, prefix);
        }
    }

    /**
     * Checks as {@link #checkPrefix(Permission, String)} does, for {@code identity} rather than the current call's
     * caller: for a stream that checks again, off its call's context, under the rules in force now (a Watch).
     *
     * @throws PermissionDeniedException when it does not
     */
    public void checkPrefix(String identity, Permission needed, String prefix) {
        Acl rules = acl;
        if (rules == null) {
            return;
        }
        if (!rules.allows(identity, needed, prefix)) {
            throw new PermissionDeniedException(identity, needed.word(), prefix.isEmpty() ? Acl.ANY : prefix);
        }
    }

    /**
     * Checks that the caller holds {@code needed} on at least one name: the check of the session calls
     * (OpenSession, KeepAlive, CloseSession), which act for no one lock. A session is only of use to take locks, so
     * an identity that may lock nothing may not open one; which locks it takes is checked by each Acquire.
     *
     * @throws PermissionDeniedException when it does not, naming no name
     */
    public void checkSomewhere(Permission needed) {
        Acl rules = acl;
        if (rules == null) {
            return;
        }
        String identity = Identities.current();
        if (!rules.allowsSomewhere(identity, needed)) {
            throw new PermissionDeniedException(identity, needed.word(), "");
        }
    }
}
