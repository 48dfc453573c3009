package io.fencer.chaos.workload;

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
    SET,
    /**
     * Each worker loops: acquire a permit of one semaphore of N permits; read its slot's counter (store scope = the
     * slot's lock name, so the store fences each slot exactly as it fences a lock); think; write the counter + 1
     * under the slot's token; release. A lost update shows per slot as in {@link #COUNTER}; more than N holders at
     * once shows as two grants of one slot overlapping in the store's order, or a slot beyond the N.
     */
    SEMAPHORE
}
