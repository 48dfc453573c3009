package io.fencer.client.internal;

import io.fencer.client.StoreOp;
import io.fencer.client.StoreUnit;
import io.fencer.client.WriteReceipt;
import io.fencer.core.FencerException;
import io.fencer.core.FencingToken;

/** An open unit on the store, addressed by its id; {@link #close()} aborts it unless committed. */
final class DefaultStoreUnit implements StoreUnit {
    private static final System.Logger LOG = System.getLogger(DefaultStoreUnit.class.getName());

    /** Where the unit is, as far as this client knows. */
    private enum State { OPEN, COMMITTED, ENDED }

    private final DefaultFencedStore store;
    private final String id;
    private final String scope;
    private final FencingToken token;
    private State state = State.OPEN;

    DefaultStoreUnit(DefaultFencedStore store, String id, String scope, FencingToken token) {
        this.store = store;
        this.id = id;
        this.scope = scope;
        this.token = token;
    }

    @Override
    public String id() {
        return id;
    }

    @Override
    public String scope() {
        return scope;
    }

    FencingToken token() {
        return token;
    }

    @Override
    public void put(byte[] key, byte[] value) {
        checkOpen();
        store.unitWrite(this, StoreOp.put(key, value));
    }

    @Override
    public void delete(byte[] key) {
        checkOpen();
        store.unitWrite(this, StoreOp.delete(key));
    }

    @Override
    public WriteReceipt commit() {
        checkOpen();
        try {
            WriteReceipt receipt = store.commitUnit(this);
            state = State.COMMITTED;
            return receipt;
        } catch (FencerException e) {
            // Refused (stale, expired) or unknown: either way this unit cannot be committed again.
            state = State.ENDED;
            throw e;
        }
    }

    @Override
    public void abort() {
        if (state == State.COMMITTED) {
            throw new IllegalStateException("unit " + id + " of scope '" + scope + "' is committed; it cannot abort");
        }
        state = State.ENDED;
        store.abortUnit(this);
    }

    /** Aborts unless committed; a failure to reach the store is logged, since the store aborts it on timeout. */
    @Override
    public void close() {
        if (state == State.COMMITTED) {
            return;
        }
        try {
            abort();
        } catch (FencerException | IllegalStateException e) {
            LOG.log(System.Logger.Level.WARNING, "could not abort unit {0} of scope ''{1}'' ({2}); the store aborts "
                    + "it when its timeout passes", id, scope, e.getMessage());
        }
    }

    private void checkOpen() {
        if (state != State.OPEN) {
            throw new IllegalStateException("unit " + id + " of scope '" + scope + "' is " + (state == State.COMMITTED
                    ? "committed" : "ended (aborted, refused or failed)"));
        }
    }

    @Override
    public String toString() {
        return "StoreUnit[" + id + ", " + scope + ", " + token + ", " + state + "]";
    }
}
