package io.fencer.server.store;

import io.fencer.core.FencingToken;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LockMode;
import io.fencer.core.ModeMismatchException;
import io.fencer.core.NotHolderException;
import io.fencer.core.PermissionDeniedException;
import io.fencer.core.ScopeMismatchException;
import io.fencer.core.Sequencer;
import io.fencer.core.TokenKeys;
import io.fencer.server.auth.Authorizer;
import io.fencer.server.auth.Permission;
import io.fencer.server.rpc.Identities;

/**
 * Who may create a scope: the rule of {@code CreateScope}, which binds a scope to the lock whose tokens it will admit,
 * for good. Without it anyone could create a scope before its owner and bind it to a lock of their own, and the
 * owner's writes would be refused {@code SCOPE_MISMATCH} from then on.
 *
 * <ol>
 *   <li>The caller presents the sequencer of a current exclusive grant of the lock it binds the scope to: only the
 *       lock's holder may say what the lock protects. On the store hosted by {@code fencer server}, the grant must
 *       be the lock service's current holder of that lock (as this peer has applied it); on a standalone
 *       {@code fencer store-server}, which has no lock service, its signature must be valid when the store has
 *       token keys (without keys it cannot tell a grant from a forgery, as for writes: give it keys).</li>
 *   <li>Binding a scope to a lock other than the scope's own name needs {@code admin} on the scope under an ACL
 *       (every CreateScope does under an ACL), and is refused on a server without an ACL: a grant proves only that
 *       the caller holds that other lock, which anyone can take, so anyone could otherwise bind any scope to a lock
 *       they hold. A scope bound to its own name is what its first write would create anyway, and its creator holds
 *       that very lock.</li>
 * </ol>
 *
 * <p>The engine's own {@code createScope} trusts its in-process caller; these checks are made at the service's edge.
 */
final class ScopeClaims {
    private final Authorizer authorizer;
    private final TokenKeys keys;
    /** The lock service's holders, for the hosted store; null on a standalone store server. */
    private final LockHolders holders;

    ScopeClaims(Authorizer authorizer, TokenKeys keys, LockHolders holders) {
        this.authorizer = authorizer;
        this.keys = keys;
        this.holders = holders;
    }

    /**
     * Checks that the caller may bind {@code scope} to {@code lock} with {@code sequencer}; call after the ACL's
     * {@code admin} check of the scope.
     *
     * @throws PermissionDeniedException when {@code lock} is not the scope's own name and no ACL is enforced
     * @throws NotHolderException when no sequencer is presented, or its token is not the lock's current grant
     * @throws ScopeMismatchException when the sequencer is a token of another lock
     * @throws ModeMismatchException when it is a shared (reader's) grant
     * @throws io.fencer.core.BadTokenSignatureException when keys are configured and its signature is not valid
     * @throws InvalidArgumentException when the sequencer is malformed
     */
    void check(String scope, String lock, String sequencer) {
        if (!lock.equals(scope) && !authorizer.enforcing()) {
            throw new PermissionDeniedException(Identities.current(), Permission.ADMIN.word(), scope, "binding scope '"
                    + InvalidArgumentException.printable(scope) + "' to lock '"
                    + InvalidArgumentException.printable(lock) + "', not to the lock of its own name, needs 'admin' on the scope in an ACL file, and this server"
                    + " has none: without one, anyone holding some lock could bind any scope to it and lock the scope's"
                    + " owner out");
        }
        if (sequencer.isEmpty()) {
            throw new NotHolderException(lock, FencingToken.NONE, currentToken(lock), 0, "CreateScope of scope '"
                    + InvalidArgumentException.printable(scope) + "' needs the sequencer of a current grant of lock '"
                    + InvalidArgumentException.printable(lock) + "': only its holder may claim a scope for it");
        }
        FencingToken token = Sequencer.parse(sequencer, keys);
        if (!token.lock().equals(lock)) {
            throw new ScopeMismatchException(scope, token);
        }
        if (token.mode() != LockMode.EXCLUSIVE) {
            throw new ModeMismatchException(scope, token.value(), token.mode());
        }
        long current = currentToken(lock);
        if (holders != null && current != token.value()) {
            throw new NotHolderException(lock, token.value(), current, 0, "CreateScope of scope '"
                    + InvalidArgumentException.printable(scope) + "' needs the current grant of lock '"
                    + InvalidArgumentException.printable(lock) + "', and token " + token + " is not it");
        }
    }

    private long currentToken(String lock) {
        return holders == null ? FencingToken.NONE : holders.currentToken(lock);
    }

    /** What the hosted store asks the lock service beside it. */
    @FunctionalInterface
    public interface LockHolders {
        /**
         * Returns the token value of the current exclusive holder of {@code lock}, or {@link FencingToken#NONE} when
         * nobody holds it exclusively.
         */
        long currentToken(String lock);
    }
}
