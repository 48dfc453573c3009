package io.fencer.server.store;

import io.fencer.core.FencePolicy;
import io.fencer.core.FencingToken;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LockMode;
import io.fencer.core.ModeMismatchException;
import io.fencer.core.NotHolderException;
import io.fencer.core.PermissionDeniedException;
import io.fencer.core.ScopeMismatchException;
import io.fencer.core.Sequencer;
import io.fencer.core.StaleTokenException;
import io.fencer.core.TokenKeys;
import io.fencer.lock.LockView;
import io.fencer.server.auth.Authorizer;
import io.fencer.server.auth.Permission;
import io.fencer.server.rpc.Identities;
import io.fencer.store.StoreEngine;
import java.util.Optional;

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
 *   <li>A scope's first write (or unit), which creates it or gives it its first accepted token, may not come under a
 *       grant the lock service has superseded, on the hosted store ({@link #checkFirstWrite}).</li>
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

    /**
     * Refuses the first write, or unit, of a scope on the hosted store under a grant the lock service beside it has
     * superseded. A scope that has accepted no token has no fence of its own: under the fence alone, a holder paused
     * past its lease would create it (or write the first value of one made by CreateScope) while the next holder has
     * not written yet. The lock service knows better, so its word stands in for the missing fence. Only a
     * superseded token is refused — the lock was granted again since, and the lock service still keeps it (a holder,
     * a waiter or a delay; an idle lock is forgotten, and with it what it could say) — never one the lock service has
     * not applied yet: a peer that lags sees fewer grants, never more, so it can only refuse less. Covers every
     * scope: one its first write creates (bound to the lock of its own name) and one {@code CreateScope} bound, to
     * that lock or another, once that binding is durable (one being made is not seen, and the write then meets the
     * fence alone). Costs every other write one look at the scope's accepted token, on the transport's thread, which
     * never waits for a commit here; a standalone store server (no lock service) checks nothing here.
     *
     * @throws StaleTokenException with a {@link StaleTokenException#why()}, when the token is superseded
     */
    void checkFirstWrite(String scope, String sequencer, StoreEngine engine) {
        if (holders == null || engine.accepted(scope) != FencingToken.NONE) {
            return;
        }
        FencingToken token = Sequencer.parse(sequencer, keys);
        String lock = engine.binding(scope).orElse(scope); // a first write binds a new scope to its own name
        if (token.mode() != LockMode.EXCLUSIVE || !token.lock().equals(lock)) {
            return; // refused for its mode or its lock by the write itself, in those words
        }
        long latest = supersededBy(token);
        if (latest != FencingToken.NONE) {
            // AT_LEAST: the comparison made here, whatever the scope's own policy.
            throw new StaleTokenException(scope, token.value(), latest, FencePolicy.AT_LEAST, "the scope has "
                    + "accepted no token yet, and the lock service beside this store has superseded this grant: lock '"
                    + InvalidArgumentException.printable(token.lock()) + "' is at token " + latest
                    + " there, so a holder paused past its lease cannot make the scope's first write");
        }
    }

    private long currentToken(String lock) {
        return holders == null ? FencingToken.NONE : holders.describe(lock).map(LockView::holder)
                .map(FencingToken::value).orElse(FencingToken.NONE);
    }

    /**
     * Returns the latest token of {@code token}'s lock when that is above {@code token}, which an exclusive holder's
     * never is: the lock was granted again since. Else {@link FencingToken#NONE}: the token is the lock's latest, above
     * every one issued, or of a lock the service forgot, left idle (no holder, waiter or delay).
     */
    private long supersededBy(FencingToken token) {
        return holders.describe(token.lock()).filter(lock -> token.value() < lock.lastToken())
                .map(LockView::lastToken).orElse(FencingToken.NONE);
    }

    /** What the hosted store asks the lock service beside it. */
    @FunctionalInterface
    public interface LockHolders {
        /** Returns the state of {@code lock} as this peer has applied it, or empty when the lock service keeps none. */
        Optional<LockView> describe(String lock);
    }
}
