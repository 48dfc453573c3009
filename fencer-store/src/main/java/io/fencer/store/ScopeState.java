package io.fencer.store;

import io.fencer.core.FencePolicy;
import io.fencer.core.FencingToken;
import io.fencer.core.ScopeMismatchException;
import io.fencer.core.StaleTokenException;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The in-memory state of one scope and its guard. The guard is held for the checks and the synced write of the
 * scope's writes in one committed batch, or of one other request (never across requests: an open unit holds the
 * scope logically, through {@link #openUnit}).
 *
 * <p>A scope that has not been persisted yet is a placeholder made by the request that holds its guard; the
 * engine discards it when that request leaves without persisting it, so refused requests leave no trace.
 */
final class ScopeState {
    final String scope;
    final ReentrantLock guard = new ReentrantLock();
    /** The lock whose tokens this scope admits; guarded by {@link #guard}. */
    String lock;
    /** Guarded by {@link #guard}. */
    FencePolicy policy = FencePolicy.AT_LEAST;
    /** Written under {@link #guard}, after the write that stored it is durable; read anywhere. */
    volatile long accepted;
    /** Guarded by {@link #guard}. */
    long revision;
    /** True once a fence record exists on disk; guarded by {@link #guard}. */
    boolean persisted;
    /**
     * {@link #lock} once a fence record holds it, else null: written under {@link #guard} with {@link #persisted},
     * read anywhere, since a persisted scope's binding never changes.
     */
    volatile String binding;
    /** True once the engine dropped this placeholder from its map; guarded by {@link #guard}. */
    boolean discarded;
    /** The unit holding this scope, or null; guarded by {@link #guard}. */
    Unit openUnit;

    ScopeState(String scope) {
        this.scope = scope;
        this.lock = scope;
    }

    /** Loads a persisted scope on open. */
    static ScopeState persisted(String scope, StoreCodec.FenceRecord record) {
        ScopeState state = new ScopeState(scope);
        state.lock = record.lock();
        state.policy = record.policy();
        state.accepted = record.accepted();
        state.revision = record.revision();
        state.persisted = true;
        state.binding = record.lock();
        return state;
    }

    /** Records a durable write; call under the guard after the write returned. */
    void applied(long acceptedAfter, long revisionAfter) {
        assert guard.isHeldByCurrentThread() : "scope " + scope + " updated without its guard";
        assert revisionAfter >= revision : "revision " + revisionAfter + " < " + revision + " for scope " + scope;
        accepted = acceptedAfter;
        revision = revisionAfter;
        persisted = true;
        if (binding == null) {
            binding = lock; // once: a volatile store (a fence) on every commit of the scope would buy nothing
        }
    }

    /** Refuses {@code token} when its lock is not the one this scope is bound to; call under the guard. */
    void checkBound(FencingToken token) {
        if (!lock.equals(token.lock())) {
            throw new ScopeMismatchException(scope, token);
        }
    }

    /**
     * Refuses {@code token} when this scope's policy does not admit it over {@code acceptedNow}, the accepted token
     * as the request sees it (a group's running one, or {@link #accepted}); call under the guard.
     */
    void checkAdmits(FencingToken token, long acceptedNow) {
        if (!policy.admits(token.value(), acceptedNow)) {
            throw new StaleTokenException(scope, token.value(), acceptedNow, policy);
        }
    }

    ScopeInfo info() {
        return new ScopeInfo(scope, lock, policy, accepted, revision, persisted,
                openUnit == null ? null : openUnit.id());
    }
}
