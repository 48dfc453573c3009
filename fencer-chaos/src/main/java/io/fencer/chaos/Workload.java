package io.fencer.chaos;

/** What the workers do under the shared lock. */
public enum Workload {
    /**
     * Each worker loops: acquire; read the counter; think; write the counter + 1 under its token; release. A lost
     * update shows as a final value below the number of acknowledged increments.
     */
    COUNTER,
    /**
     * Each worker adds unique elements to one set (read the set, add, write it back) under the lock. A lost update
     * shows as an acknowledged element missing from the final set.
     */
    SET
}
