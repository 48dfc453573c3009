package io.fencer.store;

import io.fencer.core.FencerException;
import io.fencer.core.UnavailableException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.WriteBatch;

/**
 * Imports whole scopes of another store ({@link StoreEngine#importScopes}): a scope this store does not hold is
 * written whole (its fence and every key) in one batch under its guard, RocksDB's log synced once after the last of
 * the import; one it holds identically is left alone (its accepted token raised to the imported one when that is
 * higher, never lowered); one it holds differently is refused.
 *
 * <p>Why "identically" compares every key, not only the fence: a scope of the same binding and revision may still
 * hold other values (two stores that took different writes as often), and skipping it would silently keep one
 * store's data where the operator asked for the other's.
 */
final class ScopeImports {
    private final StoreDatabase database;
    private final ScopeTable scopes;

    ScopeImports(StoreDatabase database, ScopeTable scopes) {
        this.database = database;
        this.scopes = scopes;
    }

    /**
     * Imports {@code imported} in order, each refused with {@code refusal}'s outcome when that is not null, and syncs
     * RocksDB's log once after them when any was written; see the class comment.
     */
    List<ImportOutcome> importScopes(List<ImportedScope> imported, Function<ImportedScope, ImportOutcome> refusal) {
        List<ImportOutcome> outcomes = new ArrayList<>(imported.size());
        database.enter();
        try {
            boolean written = false;
            for (ImportedScope scope : imported) {
                ImportOutcome refused = refusal.apply(scope);
                ImportOutcome outcome = refused != null ? refused : importScope(scope);
                written |= outcome.kind() == ImportOutcome.Kind.IMPORTED;
                outcomes.add(outcome);
            }
            if (written) {
                sync(imported.size());
            }
            return outcomes;
        } finally {
            database.exit();
        }
    }

    private void sync(int scopeCount) {
        try {
            database.syncWal();
        } catch (RocksDBException e) {
            throw new UnavailableException("syncing the import of " + scopeCount + " scopes to disk failed; any of"
                    + " them may or may not have been applied: " + e.getMessage(), e);
        }
    }

    /** Imports one checked scope, its batch written but not synced; call between the database's enter and exit. */
    private ImportOutcome importScope(ImportedScope scope) {
        ScopeState state = scopes.lock(scope.scope());
        try {
            return state.persisted ? compare(state, scope) : create(state, scope);
        } catch (UnavailableException e) {
            throw e;
        } catch (FencerException e) {
            return new ImportOutcome(scope.scope(), ImportOutcome.Kind.REFUSED, 0, e.getMessage());
        } finally {
            scopes.unlock(state);
        }
    }

    private ImportOutcome create(ScopeState state, ImportedScope scope) {
        boolean reserved = scopes.reserve(state, null);
        try (WriteBatch batch = new WriteBatch()) {
            batch.put(database.fenceFamily(), StoreCodec.fenceKey(scope.scope()),
                    StoreCodec.fenceValue(scope.lock(), scope.policy(), scope.accepted(), scope.revision()));
            for (ImportedScope.Key key : scope.keys()) {
                batch.put(database.dataFamily(), StoreCodec.dataKey(scope.scope(), key.key()),
                        StoreCodec.dataValue(key.writtenBy(), key.value()));
            }
            database.writeBeforeSync(batch); // synced once for the whole import, in importScopes
            state.lock = scope.lock();
            state.policy = scope.policy();
            state.applied(scope.accepted(), scope.revision());
            return new ImportOutcome(scope.scope(), ImportOutcome.Kind.IMPORTED, scope.accepted(), "");
        } catch (RocksDBException e) {
            throw new UnavailableException("importing scope '" + scope.scope() + "' failed and may or may not have"
                    + " been applied: " + e.getMessage(), e);
        } finally {
            scopes.release(state, reserved);
        }
    }

    private ImportOutcome compare(ScopeState state, ImportedScope scope) {
        String differs = differs(state, scope);
        if (differs != null) {
            return new ImportOutcome(scope.scope(), ImportOutcome.Kind.CONFLICT, 0, "scope '" + scope.scope()
                    + "' exists here and differs from the imported one: " + differs + "; nothing of it was imported");
        }
        if (scope.accepted() > state.accepted) {
            scopes.writeFence(state, scope.accepted()); // never lowered: only a higher imported token is taken
            return new ImportOutcome(scope.scope(), ImportOutcome.Kind.SKIPPED, state.accepted, "scope '"
                    + scope.scope() + "' exists here identically; its accepted token was raised to the imported "
                    + scope.accepted());
        }
        return new ImportOutcome(scope.scope(), ImportOutcome.Kind.SKIPPED, state.accepted, "scope '"
                + scope.scope() + "' exists here identically (accepted token " + state.accepted + ")");
    }

    /** Returns what differs between the scope held here and the imported one, or null when nothing does. */
    private String differs(ScopeState state, ImportedScope scope) {
        if (!state.lock.equals(scope.lock()) || state.policy != scope.policy()) {
            return "it is bound to lock '" + state.lock + "' with policy " + state.policy + ", the imported one to '"
                    + scope.lock() + "' with " + scope.policy();
        }
        if (state.revision != scope.revision()) {
            return "its revision is " + state.revision + ", the imported one's " + scope.revision();
        }
        if (state.openUnit != null) {
            return "unit " + state.openUnit.id() + " is open on it";
        }
        Map<ByteBuffer, ImportedScope.Key> imported = new HashMap<>();
        for (ImportedScope.Key key : scope.keys()) {
            imported.put(ByteBuffer.wrap(key.key()), key);
        }
        byte[] prefix = StoreCodec.dataKey(scope.scope(), new byte[0]);
        int held = 0;
        try (RocksIterator data = database.newIterator(database.dataFamily())) {
            for (data.seek(prefix); data.isValid() && startsWith(data.key(), prefix); data.next()) {
                byte[] key = Arrays.copyOfRange(data.key(), prefix.length, data.key().length);
                ImportedScope.Key other = imported.get(ByteBuffer.wrap(key));
                StoreCodec.DataRecord record = StoreCodec.decodeData(data.value());
                if (other == null || other.writtenBy() != record.token()
                        || !Arrays.equals(other.value(), record.value())) {
                    return "key " + StoreCodec.describe(key) + (other == null ? " is not in the imported scope"
                            : " holds another value or was written by another token");
                }
                held++;
            }
            data.status();
        } catch (RocksDBException e) {
            throw new UnavailableException("reading scope '" + scope.scope() + "' failed: " + e.getMessage(), e);
        }
        return held == imported.size() ? null : "it holds " + held + " keys, the imported one " + imported.size();
    }

    private static boolean startsWith(byte[] bytes, byte[] prefix) {
        return bytes.length >= prefix.length && Arrays.equals(bytes, 0, prefix.length, prefix, 0, prefix.length);
    }
}
