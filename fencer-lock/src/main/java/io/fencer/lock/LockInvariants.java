package io.fencer.lock;

import io.fencer.core.FencingToken;
import io.fencer.core.LockMode;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Locale;
import java.util.Map;

/**
 * The invariants of a {@link LockStateMachine}'s state, checked whole: tokens and the floor in range, every holder
 * and waiter listed on both sides (the lock's record and the session's), no free lock with a waiter it should have
 * granted, no idle record kept, the counts and indexes equal to what they count. Linear in the state: run by tests
 * after each command and by {@link SnapshotCodec} on every snapshot it reads, never on the apply path.
 */
final class LockInvariants {
    private final MachineState state;

    LockInvariants(MachineState state) {
        this.state = state;
    }

    /**
     * Checks every invariant of the state over all sessions and locks (linear: for tests and restored snapshots).
     *
     * @throws IllegalStateException naming the values when one is broken
     */
    void check() {
        if (state.floor < 0 || state.floor > FencingToken.VALUE_MAX) {
            throw broken("floor %d is outside [0, %d]", state.floor, FencingToken.VALUE_MAX);
        }
        int waits = 0;
        for (LockRecord record : state.locks.values()) {
            checkLock(record);
            waits += record.waiters.size();
        }
        for (SemaphoreRecord semaphore : state.semaphores.values()) {
            checkSemaphore(semaphore);
            waits += semaphore.waiters.size();
        }
        for (SessionRecord session : state.sessions.values()) {
            checkSession(session);
        }
        if (waits != state.waiterCount) {
            throw broken("waiterCount %d but the queues hold %d waits", state.waiterCount, waits);
        }
        int requestIds = 0;
        for (SessionRecord session : state.sessions.values()) {
            requestIds += session.requestId.isEmpty() ? 0 : 1;
        }
        if (requestIds != state.sessionIdsByRequestId.size()) {
            throw broken("%d sessions have a request id but the index holds %d", requestIds,
                    state.sessionIdsByRequestId.size());
        }
        state.usage.check(state.sessions.values());
    }

    private void checkLock(LockRecord record) {
        String name = record.name;
        if (record.idle()) {
            throw broken("lock %s is idle (no holder, waiter or delay) but still has a record", name);
        }
        if (record.lastToken < 0 || record.lastToken > FencingToken.VALUE_MAX) {
            throw broken("lock %s lastToken %d is outside [0, %d]", name, record.lastToken, FencingToken.VALUE_MAX);
        }
        if (record.lastToken > state.tokenCeiling()) {
            // No grant passes its generation's end: a token past it belongs to the next generation, which a group
            // restored from an earlier backup issues again.
            throw broken("lock %s lastToken %d is past the end of token generation %d, %d", name, record.lastToken,
                    state.generation, state.tokenCeiling());
        }
        if (record.held() != (record.holderTokenValue != FencingToken.NONE)) {
            throw broken("lock %s has holder session %d but token %d", name, record.holderSessionId,
                    record.holderTokenValue);
        }
        if (record.held()) {
            checkHolder(record);
        }
        checkSharedHolders(record);
        if (record.semaphore != null && state.semaphores.get(record.semaphore.name) != record.semaphore) {
            throw broken("slot %s belongs to semaphore %s, which has no record", name, record.semaphore.name);
        }
        if (!record.waiters.isEmpty() && !record.held() && !record.delayed) {
            // Only an exclusive waiter at the head, held back by readers, may wait without a writer or a delay.
            Map.Entry<Long, LockRecord.Waiter> first = record.waiters.entrySet().iterator().next();
            LockRecord.Waiter head = first.getValue();
            if (head.group() != null) {
                if (state.groupGrantable(first.getKey(), head)) {
                    throw broken("lock %s is free with multi-lock %s of session %d first in line at all its locks,"
                            + " all free: it should have been granted", name, head.group(), first.getKey());
                }
            } else if (head.mode() != LockMode.EXCLUSIVE || record.sharedHolders.isEmpty()) {
                throw broken("lock %s has %d waiters (the first %s) but no exclusive holder, no delay and %d"
                        + " shared holders: the head should have been granted", name, record.waiters.size(),
                        head.mode().text(), record.sharedHolders.size());
            }
        }
        if (record.delayed != state.delayed.contains(name)) {
            throw broken("lock %s delayed=%s but the delayed set says %s", name, record.delayed,
                    state.delayed.contains(name));
        }
        for (Map.Entry<Long, LockRecord.Waiter> waiter : record.waiters.entrySet()) {
            SessionRecord session = state.sessions.get(waiter.getKey());
            if (session == null || !session.waiting().contains(name)) {
                throw broken("waiter session %d of lock %s is %s", waiter.getKey(), name,
                        session == null ? "unknown" : "not listing the wait");
            }
            if (record.tokenOf(waiter.getKey()) != null) {
                throw broken("session %d both holds and waits on lock %s", waiter.getKey(), name);
            }
            checkGroupWait(waiter.getKey(), waiter.getValue(), name);
        }
    }

    private void checkSemaphore(SemaphoreRecord semaphore) {
        if (semaphore.permits < 1 || semaphore.permits > Limits.PERMITS_MAX) {
            throw broken("semaphore %s has %d permits", semaphore.name, semaphore.permits);
        }
        int free = state.freeSlotCount(semaphore);
        if (free == semaphore.permits && semaphore.waiters.isEmpty()) {
            throw broken("semaphore %s is idle (no slot held or delayed, no waiter) but has a record", semaphore.name);
        }
        if (free > 0 && !semaphore.waiters.isEmpty()) {
            throw broken("semaphore %s has %d free permits and %d waiters: the head should have been granted",
                    semaphore.name, free, semaphore.waiters.size());
        }
        for (int permit = 0; permit < semaphore.permits; permit++) {
            LockRecord slot = state.locks.get(semaphore.slot(permit));
            if (slot != null && (slot.semaphore != semaphore || !slot.waiters.isEmpty()
                    || !slot.sharedHolders.isEmpty())) {
                throw broken("slot %s of semaphore %s is %s", slot.name, semaphore.name, slot.semaphore != semaphore
                        ? "not linked to it" : "waited for or shared, as no slot may be");
            }
        }
        for (Long waiter : semaphore.waiters.keySet()) {
            SessionRecord session = state.sessions.get(waiter);
            if (session == null || !session.waitingPermits().contains(semaphore.name)) {
                throw broken("waiter session %d of semaphore %s is %s", waiter, semaphore.name,
                        session == null ? "unknown" : "not listing the wait");
            }
            if (state.permitOf(semaphore, waiter) != null) {
                throw broken("session %d both holds a permit of and waits on semaphore %s", waiter, semaphore.name);
            }
        }
    }

    /**
     * A multi-lock wait is one an AcquireAll could queue (1 to 64 distinct locks, exclusive), names this lock and
     * waits, the same wait, in the queue of every lock it names: a snapshot's wait that names a lock twice would be
     * granted that lock twice in one step.
     */
    private void checkGroupWait(long sessionId, LockRecord.Waiter waiter, String lock) {
        if (waiter.group() == null) {
            return;
        }
        if (waiter.group().isEmpty() || waiter.group().size() > Command.AcquireAll.LOCKS_MAX
                || waiter.mode() != LockMode.EXCLUSIVE) {
            throw broken("multi-lock wait of session %d on lock %s names %d locks in %s mode: an AcquireAll names 1 to"
                    + " %d, exclusive", sessionId, lock, waiter.group().size(), waiter.mode().text(),
                    Command.AcquireAll.LOCKS_MAX);
        }
        if (new HashSet<>(waiter.group()).size() != waiter.group().size()) {
            throw broken("multi-lock wait %s of session %d names lock %s twice", waiter.group(), sessionId, lock);
        }
        if (!waiter.group().contains(lock)) {
            throw broken("multi-lock wait %s of session %d is queued on lock %s, which it does not name",
                    waiter.group(), sessionId, lock);
        }
        for (String name : waiter.group()) {
            LockRecord other = state.locks.get(name);
            if (other == null || !waiter.equals(other.waiters.get(sessionId))) {
                throw broken("multi-lock wait %s of session %d is missing from the queue of lock %s",
                        waiter.group(), sessionId, name);
            }
        }
    }

    private void checkSharedHolders(LockRecord record) {
        if (record.sharedHolders.isEmpty()) {
            return;
        }
        if (record.held() || record.delayed) {
            throw broken("lock %s has %d shared holders and %s", record.name, record.sharedHolders.size(),
                    record.held() ? "the exclusive holder session " + record.holderSessionId : "a lock-delay");
        }
        Map<Long, Long> sessionIdsByToken = new HashMap<>();
        for (Map.Entry<Long, Long> holder : record.sharedHolders.entrySet()) {
            if (holder.getValue() < 1 || holder.getValue() > record.lastToken) {
                throw broken("lock %s shared holder %d has token %d outside [1, lastToken %d]", record.name,
                        holder.getKey(), holder.getValue(), record.lastToken);
            }
            Long other = sessionIdsByToken.put(holder.getValue(), holder.getKey());
            if (other != null) { // every grant takes a token of its own
                throw broken("lock %s shared holders %d and %d both hold token %d", record.name, other,
                        holder.getKey(), holder.getValue());
            }
            SessionRecord session = state.sessions.get(holder.getKey());
            if (session == null || !session.held().contains(record.name)) {
                throw broken("shared holder session %d of lock %s is %s", holder.getKey(), record.name,
                        session == null ? "unknown" : "not listing the lock as held");
            }
        }
    }

    private void checkHolder(LockRecord record) {
        if (record.delayed) {
            throw broken("lock %s is delayed but held by session %d", record.name, record.holderSessionId);
        }
        if (record.holderTokenValue < 1 || record.holderTokenValue > record.lastToken) {
            throw broken("lock %s holder token %d is outside [1, lastToken %d]", record.name,
                    record.holderTokenValue, record.lastToken);
        }
        SessionRecord holder = state.sessions.get(record.holderSessionId);
        if (holder == null || !holder.held().contains(record.name)) {
            throw broken("holder session %d of lock %s is %s", record.holderSessionId, record.name,
                    holder == null ? "unknown" : "not listing the lock as held");
        }
    }

    private void checkSession(SessionRecord session) {
        if (session.id < 1 || session.id > state.sessionIdLast) {
            throw broken("session id %d is outside [1, last id %d]", session.id, state.sessionIdLast);
        }
        for (String name : session.held()) {
            LockRecord record = state.locks.get(name);
            if (record == null || record.tokenOf(session.id) == null) {
                throw broken("session %d lists lock %s as held but its holder is %s", session.id, name,
                        record == null ? "none (no record)" : record.holderSessionId + " (shared holders "
                                + record.sharedHolders.keySet() + ")");
            }
            if (session.waiting().contains(name)) {
                throw broken("session %d both holds and waits on lock %s", session.id, name);
            }
        }
        for (String name : session.waiting()) {
            LockRecord record = state.locks.get(name);
            if (record == null || !record.waiters.containsKey(session.id)) {
                throw broken("session %d lists a wait on lock %s that its queue lacks", session.id, name);
            }
        }
        for (String name : session.waitingPermits()) {
            SemaphoreRecord semaphore = state.semaphores.get(name);
            if (semaphore == null || !semaphore.waiters.containsKey(session.id)) {
                throw broken("session %d lists a wait on semaphore %s that its queue lacks", session.id, name);
            }
        }
        if (!session.requestId.isEmpty()
                && !Long.valueOf(session.id).equals(state.sessionIdsByRequestId.get(session.requestId))) {
            throw broken("session %d request id '%s' maps to session %s", session.id, session.requestId,
                    state.sessionIdsByRequestId.get(session.requestId));
        }
    }

    static IllegalStateException broken(String format, Object... values) {
        return new IllegalStateException("lock state machine invariant broken: " + String.format(Locale.ROOT, format, values));
    }
}
