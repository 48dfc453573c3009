package io.fencer.store;

import io.fencer.core.FencingToken;
import java.util.List;

/**
 * The broken write pattern fencing exists to stop (check, then write in a separate step), kept as the control of
 * {@code StoreEngineConcurrencyTest} and built here from the engine's package-private parts: it checks the token under
 * the scope's guard, releases the guard, then writes in a second step setting the accepted token to the presented one,
 * so a lower token can land after a higher one. Never use it for anything but showing that the check above catches
 * such writes.
 */
final class CheckThenActControl {
    private CheckThenActControl() {}

    /** Writes {@code ops} to {@code scope} with the token of {@code sequencer}, checked and applied in two steps. */
    static WriteResult write(StoreEngine store, String scope, String sequencer, List<Op> ops) {
        FencingToken token = store.checks().parseToken(sequencer);
        store.checks().checkOps(scope, ops);
        store.database().enter();
        try {
            check(store, scope, token);
            // the guard was released: a higher token may be applied here, and this write then lands below it
            ScopeTable scopes = store.scopes();
            ScopeState state = scopes.lockFor(scope, token);
            boolean reserved = false;
            try {
                reserved = scopes.reserve(state, token);
                long now = store.options().ticker().nanoTime();
                return store.units().applyAlone(state, token, ops, token.value(), now);
            } finally {
                scopes.release(state, reserved);
                scopes.unlock(state);
            }
        } finally {
            store.database().exit();
        }
    }

    /** The check step: the token against the scope's binding, accepted token and open unit, under the guard. */
    private static void check(StoreEngine store, String scope, FencingToken token) {
        ScopeState checked = store.scopes().lockFor(scope, token);
        try {
            checked.checkBound(token);
            checked.checkAdmits(token, checked.accepted);
            store.units().checkOpenUnit(checked, token, checked.openUnit, store.options().ticker().nanoTime());
        } finally {
            store.scopes().unlock(checked);
        }
    }
}
