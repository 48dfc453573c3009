package io.fencer.client;

import io.fencer.core.FencingToken;

/** One grant of a lock: its fencing token, released on {@link #close()}. */
public interface Grant extends AutoCloseable {

    /** Returns the token to carry with every write made under this grant. */
    FencingToken token();

    /**
     * Returns the token's wire form exactly as the lock service sent it, to hand to resources (for example
     * {@link FencedStore}): {@code fencer1.<base64url(lock)>.<value>}, followed by {@code .<kid>.<mac>} when the
     * service signs its tokens. Resources that require signed tokens refuse {@code token().sequencer()}, which is
     * never signed; pass this one.
     */
    String sequencer();

    /**
     * Releases the lock, if this grant is still the holder. Releasing a grant that was already superseded
     * (its session expired) changes nothing and is not an error here; see {@link FencerClient#release} for the
     * strict form.
     */
    @Override
    void close();
}
