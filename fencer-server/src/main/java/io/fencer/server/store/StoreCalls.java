package io.fencer.server.store;

import io.fencer.core.FencePolicy;
import io.fencer.store.ImportOutcome;
import io.fencer.store.ImportedScope;
import io.fencer.store.Op;
import io.fencer.store.ReadResult;
import io.fencer.store.ScopeInfo;
import io.fencer.store.StoreEngine;
import io.fencer.store.WriteResult;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * What the Store service asks of the store it serves: a local {@link StoreEngine} (a single node's store), or the
 * {@link ReplicatedStore} of a group of peers, whose calls go through the Raft log. Each method throws or fails with
 * the engine's typed errors ({@link StoreEngine}).
 */
interface StoreCalls {
    /** Writes as {@link StoreEngine#writeAsync}: the future completes once the write is durable or refused. */
    CompletableFuture<WriteResult> write(String scope, String sequencer, List<Op> ops, String idempotencyKey);

    /** Reads as {@link StoreEngine#get}; blocks until the read can be answered (call from a worker). */
    ReadResult get(String scope, byte[] key, String fencingSequencer);

    /** Returns a scope's state as {@link StoreEngine#scope}; blocks as {@link #get}. */
    ScopeInfo scope(String scope);

    /** Creates a scope as {@link StoreEngine#createScope}; blocks until it is durable. */
    ScopeInfo createScope(String scope, String lock, FencePolicy policy);

    /** Begins a unit as {@link StoreEngine#begin}. */
    StoreUnit begin(String scope, String sequencer, Duration timeout);

    /**
     * Imports whole scopes as {@link StoreEngine#importScopes} does, in order; blocks until durable. The caller
     * checked them ({@link io.fencer.store.ImportedScope#check}) and the caller's permission.
     */
    List<ImportOutcome> importScopes(List<ImportedScope> scopes);

    /** Returns the engine holding this node's data: for backups, options and the periodic sweeps. */
    StoreEngine engine();

    /**
     * Ends the units past their deadline now, as the store's periodic sweep does, for a caller that needs their bytes
     * back before it. A replicated store's units end as their state is read ({@link ReplicatedUnit}), and its replica
     * ends none but in its apply, so by default this does nothing.
     */
    default void expireUnits() {
    }

    /**
     * Returns {@code calls} with {@code check} run before each call (it throws to refuse the call); {@link #engine}
     * stays unguarded, so that a backup of the data can still be taken.
     */
    static StoreCalls guarded(StoreCalls calls, Runnable check) {
        return new StoreCalls() {
            @Override
            public CompletableFuture<WriteResult> write(String scope, String sequencer, List<Op> ops,
                    String idempotencyKey) {
                try {
                    check.run();
                } catch (RuntimeException e) {
                    return CompletableFuture.failedFuture(e);
                }
                return calls.write(scope, sequencer, ops, idempotencyKey);
            }

            @Override
            public ReadResult get(String scope, byte[] key, String fencingSequencer) {
                check.run();
                return calls.get(scope, key, fencingSequencer);
            }

            @Override
            public ScopeInfo scope(String scope) {
                check.run();
                return calls.scope(scope);
            }

            @Override
            public ScopeInfo createScope(String scope, String lock, FencePolicy policy) {
                check.run();
                return calls.createScope(scope, lock, policy);
            }

            @Override
            public StoreUnit begin(String scope, String sequencer, Duration timeout) {
                check.run();
                return calls.begin(scope, sequencer, timeout);
            }

            @Override
            public List<ImportOutcome> importScopes(List<ImportedScope> scopes) {
                check.run();
                return calls.importScopes(scopes);
            }

            @Override
            public StoreEngine engine() {
                return calls.engine();
            }

            @Override
            public void expireUnits() {
                calls.expireUnits(); // housekeeping of units already begun, not a call to refuse
            }
        };
    }

    /** The calls of a single node's store: its engine, directly. */
    static StoreCalls local(StoreEngine engine) {
        return new StoreCalls() {
            @Override
            public CompletableFuture<WriteResult> write(String scope, String sequencer, List<Op> ops,
                    String idempotencyKey) {
                return engine.writeAsync(scope, sequencer, ops, idempotencyKey);
            }

            @Override
            public ReadResult get(String scope, byte[] key, String fencingSequencer) {
                return engine.get(scope, key, fencingSequencer);
            }

            @Override
            public ScopeInfo scope(String scope) {
                return engine.scope(scope);
            }

            @Override
            public ScopeInfo createScope(String scope, String lock, FencePolicy policy) {
                return engine.createScope(scope, lock, policy);
            }

            @Override
            public StoreUnit begin(String scope, String sequencer, Duration timeout) {
                return StoreUnit.of(engine.begin(scope, sequencer, timeout));
            }

            @Override
            public List<ImportOutcome> importScopes(List<ImportedScope> scopes) {
                return engine.importScopes(scopes);
            }

            @Override
            public StoreEngine engine() {
                return engine;
            }

            @Override
            public void expireUnits() {
                engine.expireUnits(); // a unit's state stays OPEN past its deadline until the engine ends it
            }
        };
    }
}
