package io.fencer.store;

import io.fencer.core.FencingToken;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LimitExceededException;
import io.fencer.core.Ticker;
import io.fencer.core.UnavailableException;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import org.rocksdb.RocksDBException;
import org.rocksdb.WriteBatch;

/**
 * The store's open {@link Unit units} by id, bounded by {@code unitsOpenMax}: begins, commits and aborts them, and
 * ends them when a higher token preempts them or their deadline passes.
 *
 * <p>Locks, always in this order: the scope's guard, then the unit's lock. A unit holds its scope through
 * {@code ScopeState.openUnit}, set and cleared under the scope's guard only ({@link #end} establishes "an ended unit
 * is no scope's open unit and not in the registry"), so every request that checks a token against the open unit
 * ({@link #checkOpenUnit}) sees it under the same guard.
 */
final class Units {
    private static final int UNIT_ID_BYTES = 16;
    private static final SecureRandom UNIT_IDS = new SecureRandom();

    private final StoreDatabase database;
    private final ScopeTable scopes;
    private final IdempotencyIndex idempotency;
    private final StoreObservers observers;
    private final RequestChecks checks;
    private final Ticker ticker;
    private final int unitsOpenMax;
    private final ConcurrentHashMap<String, Unit> units = new ConcurrentHashMap<>();
    /** Open units plus reservations of units being begun. */
    private final AtomicInteger unitCount = new AtomicInteger();

    Units(StoreDatabase database, ScopeTable scopes, IdempotencyIndex idempotency, StoreObservers observers,
            RequestChecks checks, Ticker ticker, int unitsOpenMax) {
        this.database = database;
        this.scopes = scopes;
        this.idempotency = idempotency;
        this.observers = observers;
        this.checks = checks;
        this.ticker = ticker;
        this.unitsOpenMax = unitsOpenMax;
    }

    /** Returns the checks a unit's ops pass as they are added. */
    RequestChecks checks() {
        return checks;
    }

    /** True when {@code unit}'s deadline has passed by the ticker, whether or not the sweep has ended it yet. */
    boolean pastDeadline(Unit unit) {
        return ticker.nanoTime() - unit.deadlineNanos() >= 0;
    }

    /** Begins a unit of a checked {@code token} and {@code timeout}; see {@link StoreEngine#begin}. */
    Unit begin(String scope, FencingToken token, Duration timeout) {
        database.enter();
        try {
            ScopeState state = scopes.lockFor(scope, token);
            try {
                return beginGuarded(state, token, timeout);
            } finally {
                scopes.unlock(state);
            }
        } finally {
            database.exit();
        }
    }

    private Unit beginGuarded(ScopeState state, FencingToken token, Duration timeout) {
        state.checkBound(token);
        long now = ticker.nanoTime();
        state.checkAdmits(token, state.accepted);
        Unit preempted = checkOpenUnit(state, token, state.openUnit, now);
        if (unitCount.incrementAndGet() > unitsOpenMax) {
            unitCount.decrementAndGet();
            throw new LimitExceededException("unitsOpenMax", unitsOpenMax, unitsOpenMax
                    + " units are open, the most allowed; token " + token + " cannot begin one on scope '"
                    + state.scope + "'");
        }
        boolean begun = false;
        boolean reserved = false;
        try {
            reserved = scopes.reserve(state, token);
            if (preempted != null) {
                end(state, preempted, Unit.State.PREEMPTED, token.value(), null);
            }
            if (!state.persisted || token.value() > state.accepted) {
                scopes.writeFence(state, token.value());
            }
            Unit unit = new Unit(this, newUnitId(), state.scope, token, state.policy, timeout,
                    now + timeout.toNanos());
            state.openUnit = unit;
            units.put(unit.id(), unit);
            begun = true;
            return unit;
        } finally {
            if (!begun) {
                unitCount.decrementAndGet();
            }
            scopes.release(state, reserved);
        }
    }

    /** Returns the open unit of id {@code id}, if any; units leave this registry when they end. */
    Optional<Unit> find(String id) {
        return id == null ? Optional.empty() : Optional.ofNullable(units.get(id));
    }

    /** Returns the number of open units. */
    int size() {
        return units.size();
    }

    /** Aborts every open unit whose deadline has passed by the ticker; returns the number aborted. */
    int expire() {
        long now = ticker.nanoTime();
        int expired = 0;
        for (Unit unit : units.values()) {
            if (now - unit.deadlineNanos() < 0) {
                continue;
            }
            ScopeState state = scopes.lock(unit.scope());
            try {
                unit.lock.lock();
                try {
                    if (unit.state() == Unit.State.OPEN && state.openUnit == unit) {
                        end(state, unit, Unit.State.EXPIRED, 0, null);
                        expired++;
                    }
                } finally {
                    unit.lock.unlock();
                }
            } finally {
                scopes.unlock(state);
            }
        }
        return expired;
    }

    /** Commits {@code unit}; see {@link Unit#commit()}. */
    WriteResult commit(Unit unit) {
        database.enter();
        try {
            ScopeState state = scopes.lock(unit.scope());
            try {
                unit.lock.lock();
                try {
                    return commitGuarded(state, unit);
                } finally {
                    unit.lock.unlock();
                }
            } finally {
                scopes.unlock(state);
            }
        } finally {
            database.exit();
        }
    }

    private WriteResult commitGuarded(ScopeState state, Unit unit) {
        if (unit.state() == Unit.State.COMMITTED) {
            return unit.result();
        }
        unit.checkOpen();
        assert state.openUnit == unit : "open unit " + unit + " is not the open unit of scope " + state.scope;
        long now = ticker.nanoTime();
        if (now - unit.deadlineNanos() >= 0) {
            end(state, unit, Unit.State.EXPIRED, 0, null);
            unit.checkOpen();
        }
        assert state.accepted == unit.token().value()
                : "accepted " + state.accepted + " != unit token " + unit.token() + " while the unit is open";
        try {
            WriteResult result = applyAlone(state, unit.token(), unit.ops(), state.accepted, now);
            end(state, unit, Unit.State.COMMITTED, 0, result);
            return result;
        } catch (UnavailableException e) {
            end(state, unit, Unit.State.FAILED, 0, null);
            throw e;
        }
    }

    /** Aborts {@code unit}; see {@link Unit#abort()}. */
    void abort(Unit unit) {
        ScopeState state = scopes.lock(unit.scope());
        try {
            unit.lock.lock();
            try {
                Unit.State current = unit.state();
                if (current == Unit.State.COMMITTED) {
                    throw new InvalidArgumentException("unit", unit.id(), "unit " + unit.id() + " of scope '"
                            + unit.scope() + "' is already committed; it cannot be aborted");
                }
                if (current == Unit.State.OPEN) {
                    end(state, unit, Unit.State.ABORTED, 0, null);
                }
            } finally {
                unit.lock.unlock();
            }
        } finally {
            scopes.unlock(state);
        }
    }

    /**
     * Checks {@code token}, which passed the scope's fence, against {@code openUnit}, the scope's open unit as the
     * request sees it; call under the scope's guard. Ends an open unit whose deadline passed.
     *
     * @return the open unit that {@code token}, being higher, preempts; or null
     * @throws LimitExceededException ({@code unitsPerScopeMax}) when the open unit has the same token
     */
    Unit checkOpenUnit(ScopeState state, FencingToken token, Unit openUnit, long now) {
        if (openUnit == null) {
            return null;
        }
        if (now - openUnit.deadlineNanos() >= 0) {
            end(state, openUnit, Unit.State.EXPIRED, 0, null);
            return null;
        }
        if (token.value() > openUnit.token().value()) {
            return openUnit;
        }
        assert token.value() == openUnit.token().value()
                : "token " + token + " below open unit " + openUnit + " passed the fence of " + state.scope;
        throw new LimitExceededException("unitsPerScopeMax", 1, "scope '" + state.scope + "' is held by open unit "
                + openUnit.id() + " of token " + openUnit.token() + " until it commits, aborts or times out; token "
                + token + " may not write meanwhile (a higher token would preempt the unit)");
    }

    /** Ends {@code unit} and releases its scope; call under the scope's guard. */
    void end(ScopeState state, Unit unit, Unit.State outcome, long preemptingToken, WriteResult result) {
        assert state.guard.isHeldByCurrentThread() : "unit " + unit + " ended without the guard of " + state.scope;
        assert state.openUnit == unit : "unit " + unit + " is not the open unit of scope " + state.scope;
        unit.lock.lock();
        try {
            unit.end(outcome, preemptingToken, result);
        } finally {
            unit.lock.unlock();
        }
        state.openUnit = null;
        units.remove(unit.id());
        unitCount.decrementAndGet();
    }

    /**
     * Writes {@code ops} with {@code accepted} as a group of one (a unit's commit; the control test's write too):
     * data and fence in one synced batch, then updates the scope's state; call under the guard, between the
     * database's enter and exit.
     */
    WriteResult applyAlone(ScopeState state, FencingToken token, List<Op> ops, long accepted, long now) {
        try (WriteBatch batch = new WriteBatch()) {
            WriteGroup group = new WriteGroup(state, batch, database, idempotency, scopes, this, observers);
            WriteResult result = group.add(token, ops, null, null, accepted, now);
            group.addFence();
            database.writeSynced(batch);
            group.durable();
            group.publish();
            return result;
        } catch (RocksDBException e) {
            throw new UnavailableException("the write to scope '" + state.scope + "' with token " + token
                    + " failed and may or may not have been applied: " + e.getMessage(), e);
        }
    }

    private static String newUnitId() {
        byte[] id = new byte[UNIT_ID_BYTES];
        UNIT_IDS.nextBytes(id);
        return Base64.getUrlEncoder().withoutPadding().encodeToString(id);
    }
}
