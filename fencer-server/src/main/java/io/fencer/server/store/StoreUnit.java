package io.fencer.server.store;

import io.fencer.store.Op;
import io.fencer.store.Unit;
import io.fencer.store.WriteResult;

/**
 * A unit as the Store service drives it: an engine's {@link Unit} on a single node's store, or a
 * {@link ReplicatedUnits replicated store's} unit, buffered on the leader and committed as one log entry.
 */
interface StoreUnit {
    String id();

    String scope();

    /** The unit's token; the scope's accepted token once the unit is begun (on the replicated store: committed). */
    io.fencer.core.FencingToken token();

    /** Returns where the unit is in its life, with the states of {@link Unit.State}. */
    Unit.State state();

    /** Buffers {@code op}, as {@link Unit#add}. */
    void add(Op op);

    /** Applies the buffered ops all or nothing, as {@link Unit#commit}. */
    WriteResult commit();

    /** Aborts the unit, as {@link Unit#abort}. */
    void abort();

    /** The unit of a single node's engine. */
    static StoreUnit of(Unit unit) {
        return new StoreUnit() {
            @Override
            public String id() {
                return unit.id();
            }

            @Override
            public String scope() {
                return unit.scope();
            }

            @Override
            public io.fencer.core.FencingToken token() {
                return unit.token();
            }

            @Override
            public Unit.State state() {
                return unit.state();
            }

            @Override
            public void add(Op op) {
                unit.add(op);
            }

            @Override
            public WriteResult commit() {
                return unit.commit();
            }

            @Override
            public void abort() {
                unit.abort();
            }
        };
    }
}
