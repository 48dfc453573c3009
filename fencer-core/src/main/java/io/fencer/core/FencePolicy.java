package io.fencer.core;

/** The rule by which a resource admits or refuses a presented token against its accepted one. */
public enum FencePolicy {
    /**
     * Refuses {@code presented < accepted}: the current holder may write many times and retry (the default).
     */
    AT_LEAST {
        @Override
        public boolean admits(long presented, long accepted) {
            return presented >= accepted;
        }
    },
    /**
     * Refuses {@code presented <= accepted}: one write per grant, so a grant's write is applied at most once (a retry
     * under the same token is refused too).
     */
    STRICT {
        @Override
        public boolean admits(long presented, long accepted) {
            return presented > accepted;
        }
    };

    /** Returns true when a write carrying {@code presented} may proceed past {@code accepted}. */
    public abstract boolean admits(long presented, long accepted);
}
