package io.fencer.client;

import io.fencer.core.FencingToken;

/** One grant of a lock: its fencing token, released on {@link #close()}. */
public interface Grant extends AutoCloseable {

    /** Returns the token to carry with every write made under this grant. */
    FencingToken token();

    /**
     * Releases the lock, if this grant is still the holder. Releasing a grant that was already superseded
     * (its session expired) changes nothing and is not an error here; see {@link FencerClient#release} for the
     * strict form.
     */
    @Override
    void close();
}
