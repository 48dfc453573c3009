package io.fencer.store;

/**
 * What {@link StoreEngine#importScope} did with one scope.
 *
 * @param accepted the scope's accepted token after the import; 0 when it was refused
 * @param detail why a scope was skipped or refused, in a sentence naming it; empty when imported
 */
public record ImportOutcome(String scope, Kind kind, long accepted, String detail) {
    /** The outcomes of an import. */
    public enum Kind {
        /** The store did not hold the scope: it was created as given. */
        IMPORTED,
        /** The store held the scope identically (a rerun): nothing written but a higher accepted token. */
        SKIPPED,
        /** The store holds the scope differently: nothing of it was written. */
        CONFLICT,
        /** Refused by a limit of this store (such as {@code scopesMax}): nothing of it was written. */
        REFUSED
    }
}
