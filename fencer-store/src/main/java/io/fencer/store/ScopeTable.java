package io.fencer.store;

import io.fencer.core.FencingToken;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LimitExceededException;
import io.fencer.core.LockNames;
import io.fencer.core.ScopeMismatchException;
import io.fencer.core.UnavailableException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;

/**
 * The store's scopes by name: each scope's state and guard, placeholders for scopes not persisted yet, and the
 * reservations that bound their number by {@code scopesMax}.
 *
 * <p>A request locks a scope's guard with {@link #lock} (or {@link #lockFor}) and always leaves through
 * {@link #unlock}, which discards the placeholder when the request persisted nothing: the invariant "a scope in the
 * map is persisted or held by the request that made it" is established there. A scope is counted against
 * {@code scopesMax} from its {@link #reserve reservation}, made under its guard before its first synced write, until
 * it is persisted or {@link #release released}.
 */
final class ScopeTable {
    private final StoreDatabase database;
    private final int scopesMax;
    private final ConcurrentHashMap<String, ScopeState> scopes = new ConcurrentHashMap<>();
    /** Persisted scopes plus reservations of scopes being created. */
    private final AtomicInteger scopeCount = new AtomicInteger();

    ScopeTable(StoreDatabase database, int scopesMax) {
        this.database = database;
        this.scopesMax = scopesMax;
    }

    /** Reads every scope's fence back from disk; call once, on open, before any request. */
    void load() {
        try (RocksIterator fences = database.newIterator(database.fenceFamily())) {
            for (fences.seekToFirst(); fences.isValid(); fences.next()) {
                String scope = StoreCodec.scopeOfFenceKey(fences.key());
                scopes.put(scope, ScopeState.persisted(scope, StoreCodec.decodeFence(fences.value())));
            }
            fences.status();
        } catch (RocksDBException e) {
            throw new UnavailableException("cannot read the fences of the store at " + database.directory() + ": "
                    + e, e);
        }
        scopeCount.set(scopes.size());
    }

    /** Returns the state of {@code scope} without its guard, or null; only its volatile fields may be read. */
    ScopeState find(String scope) {
        return scopes.get(scope);
    }

    /**
     * Returns true when {@code scope} is persisted; false for a placeholder, which a read leaves while it holds the
     * guard: a request that may create the scope must be checked then too ({@link #checkCreatable}).
     */
    boolean isPersisted(String scope) {
        ScopeState state = scopes.get(scope);
        return state != null && state.binding != null;
    }

    /** Returns the number of persisted scopes plus reservations. */
    int count() {
        return scopeCount.get();
    }

    /**
     * Locks the scope's guard for a request carrying {@code token}. A request that would create the scope is checked
     * first, before a placeholder is made for it: see {@link #checkCreatable}.
     */
    ScopeState lockFor(String scope, FencingToken token) {
        if (!isPersisted(scope)) {
            checkCreatable(scope, token);
        }
        return lock(scope);
    }

    /**
     * Checks a write or unit that would create {@code scope} with {@code token}: the scope's name must be one a new
     * scope may have ({@link LockNames#checkNew}: no invisible or text-reordering characters; scopes kept from before
     * the rule still load and take writes), and the token must be of the lock of the scope's own name, the binding a
     * scope gets by default.
     *
     * @throws InvalidArgumentException naming the offending code point
     * @throws ScopeMismatchException when the token is of another lock
     */
    static void checkCreatable(String scope, FencingToken token) {
        LockNames.checkNew("scope", scope);
        if (!scope.equals(token.lock())) {
            throw new ScopeMismatchException(scope, token);
        }
    }

    /** Locks the guard of {@code scope}, making a placeholder state when the scope does not exist. */
    ScopeState lock(String scope) {
        while (true) {
            ScopeState state = scopes.computeIfAbsent(scope, ScopeState::new);
            state.guard.lock();
            if (!state.discarded) {
                return state;
            }
            state.guard.unlock(); // another request discarded this placeholder meanwhile: take the new one
        }
    }

    /** Unlocks the guard, first discarding the state when it is a placeholder nothing persisted. */
    void unlock(ScopeState state) {
        try {
            if (!state.persisted && !state.discarded) {
                assert state.openUnit == null : "unpersisted scope " + state.scope + " has open unit " + state.openUnit;
                state.discarded = true;
                scopes.remove(state.scope, state);
            }
        } finally {
            state.guard.unlock();
        }
    }

    /** Reserves a place for a scope about to be persisted; returns true when it reserved one. Call under the guard. */
    boolean reserve(ScopeState state, FencingToken token) {
        if (state.persisted) {
            return false;
        }
        if (scopeCount.incrementAndGet() > scopesMax) {
            scopeCount.decrementAndGet();
            throw new LimitExceededException("scopesMax", scopesMax, "the store holds " + scopesMax
                    + " scopes, the most allowed; scope '" + state.scope + "' cannot be created"
                    + (token == null ? "" : " by token " + token));
        }
        return true;
    }

    /** Gives back a reservation whose scope was not persisted after all; call under the guard. */
    void release(ScopeState state, boolean reserved) {
        if (reserved && !state.persisted) {
            scopeCount.decrementAndGet();
        }
    }

    /**
     * Writes the scope's fence record alone, synced, with {@code accepted}, then records it in the state; call
     * under the guard, between the database's enter and exit.
     */
    void writeFence(ScopeState state, long accepted) {
        try {
            database.putSynced(database.fenceFamily(), StoreCodec.fenceKey(state.scope),
                    StoreCodec.fenceValue(state.lock, state.policy, accepted, state.revision));
        } catch (RocksDBException e) {
            throw new UnavailableException("writing the fence of scope '" + state.scope
                    + "' failed and may or may not have been applied: " + e.getMessage(), e);
        }
        state.applied(accepted, state.revision);
    }
}
