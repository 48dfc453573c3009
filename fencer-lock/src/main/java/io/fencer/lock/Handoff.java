package io.fencer.lock;

import io.fencer.core.FencingToken;
import io.fencer.core.LockMode;
import java.util.Iterator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What a lock passes to when it is freed (released, its holder's session ended, its delay over) or when a wait
 * leaves its queue: its next waiters in their queue's order. A plain lock's FIFO queue lets in one writer, or every
 * reader up to the first writer; a permit slot goes to its semaphore's next waiter; a multi-lock wait is granted all
 * its locks at once, when it is first in line at each and each is free. Every primitive's apply step ends here, so the
 * order in which waiters are granted is decided in this one place.
 */
final class Handoff {
    private final MachineState state;

    Handoff(MachineState state) {
        this.state = state;
    }

    /**
     * Grants a lock without exclusive holder and delay to the waiters at the head of its queue that the FIFO rule
     * lets in: one exclusive waiter when nobody holds, or every shared waiter up to the first exclusive one (which
     * then waits for them; shared requests behind it wait too, so a writer is never starved). Drops the record when
     * it is left idle. Returns the first new token, or null.
     */
    FencingToken grantNext(LockRecord record, List<Event> events) {
        assert !record.held() && !record.delayed : "lock " + record.name + " is not free";
        if (record.semaphore != null) {
            return grantSlot(record, events);
        }
        if (record.waiters.isEmpty()) {
            state.dropIfIdle(record);
            return null;
        }
        // The token ceiling (from format level 5 the end of the generation), not VALUE_MAX: a token past the
        // generation is the next one's, which a group restored from a backup taken before this grant counts in.
        long ceiling = state.tokenCeiling();
        if (Math.max(record.lastToken, state.floor) >= ceiling) {
            // Unreachable in practice (2^48 grants); the waiters can never be granted, so they are dropped, also while
            // readers hold: a reader left at the head of the queue behind readers is a state the invariants refuse.
            dropWaiters(record, events);
            state.dropIfIdle(record);
            return null;
        }
        FencingToken first = null;
        Iterator<Map.Entry<Long, LockRecord.Waiter>> queue = record.waiters.entrySet().iterator();
        while (queue.hasNext() && Math.max(record.lastToken, state.floor) < ceiling) {
            Map.Entry<Long, LockRecord.Waiter> head = queue.next();
            LockMode mode = head.getValue().mode();
            if (mode == LockMode.EXCLUSIVE && record.hasHolder()) {
                break; // the writer waits for the readers that hold; everybody behind it waits for the writer
            }
            if (head.getValue().group() != null) {
                // A multi-lock is granted all its locks at once, when first in line and free at every one.
                return state.groupGrantable(head.getKey(), head.getValue())
                        ? grantGroup(state.sessions.get(head.getKey()), head.getValue(), record.name, events) : first;
            }
            queue.remove();
            state.waiterCount--;
            SessionRecord session = state.sessions.get(head.getKey());
            boolean listed = session.removeWaiting(record.name);
            assert listed : "session " + session.id + " did not list its wait on lock " + record.name;
            FencingToken token = state.issue(record, session, head.getValue().requestId(), mode, events);
            first = first == null ? token : first;
            if (mode == LockMode.EXCLUSIVE) {
                break;
            }
        }
        if (Math.max(record.lastToken, state.floor) >= ceiling && !record.held() && !record.waiters.isEmpty()) {
            dropWaiters(record, events); // readers let in up to the ceiling: the rest of the queue, as above
        }
        return first;
    }

    /**
     * After a wait left {@code record}'s queue: grants the waiters the departed one held back (an exclusive waiter
     * at the head keeps shared ones behind it out while readers hold), or drops the record when idle.
     */
    void afterWaitRemoved(LockRecord record, List<Event> events) {
        if (!record.held() && !record.delayed) {
            grantNext(record, events);
        } else {
            state.dropIfIdle(record);
        }
    }

    /**
     * Drops every wait on an exhausted lock; a multi-lock's wait leaves all its queues, as it waits as a unit, and
     * the other locks it leaves pass to their next waiters.
     */
    private void dropWaiters(LockRecord record, List<Event> events) {
        Set<LockRecord> others = new LinkedHashSet<>();
        for (Map.Entry<Long, LockRecord.Waiter> waiter : record.waiters.entrySet()) {
            SessionRecord session = state.sessions.get(waiter.getKey());
            List<String> group = waiter.getValue().group();
            for (String name : group == null ? List.of(record.name) : group) {
                LockRecord each = state.locks.get(name);
                if (each != record) {
                    if (each == null || each.waiters.remove(session.id) == null) {
                        // A multi-lock leaving its queues one by one (cancelled, or its session ended) already left
                        // this one, and its departure from the one before led here: counted out there.
                        continue;
                    }
                    others.add(each);
                }
                session.removeWaiting(name);
                events.add(new Event.WaitDropped(session.id, name, waiter.getValue().requestId()));
                state.waiterCount--;
            }
        }
        record.waiters.clear();
        for (LockRecord other : others) {
            if (state.locks.get(other.name) == other) {
                afterWaitRemoved(other, events);
            }
        }
    }

    /** Drops every wait for a permit of a semaphore whose freed slot is exhausted, as is every slot then. */
    private void dropPermitWaiters(SemaphoreRecord semaphore, List<Event> events) {
        for (Map.Entry<Long, String> waiter : semaphore.waiters.entrySet()) {
            state.sessions.get(waiter.getKey()).removePermitWait(semaphore.name);
            events.add(new Event.WaitDropped(waiter.getKey(), semaphore.name, waiter.getValue()));
            state.waiterCount--;
        }
        semaphore.waiters.clear();
    }

    /**
     * Grants a freed permit slot (no holder, no delay) to its semaphore's next waiter, under a token above every
     * token of that slot; or drops the slot's record, and the semaphore's when it is left idle. Returns the new
     * token, or null.
     */
    private FencingToken grantSlot(LockRecord slot, List<Event> events) {
        SemaphoreRecord semaphore = slot.semaphore;
        if (Math.max(slot.lastToken, state.floor) >= state.tokenCeiling()) {
            // Dropping the slot folds its counter into the floor: no slot can be granted again.
            dropPermitWaiters(semaphore, events);
        }
        if (semaphore.waiters.isEmpty()) {
            state.dropIfIdle(slot);
            state.dropIfIdle(semaphore);
            return null;
        }
        Iterator<Map.Entry<Long, String>> queue = semaphore.waiters.entrySet().iterator();
        Map.Entry<Long, String> head = queue.next();
        queue.remove();
        state.waiterCount--;
        SessionRecord session = state.sessions.get(head.getKey());
        boolean listed = session.removePermitWait(semaphore.name);
        assert listed : "session " + session.id + " did not list its wait on semaphore " + semaphore.name;
        return state.issue(slot, session, head.getValue(), LockMode.EXCLUSIVE, events);
    }

    /** Grants every lock of a grantable multi-lock wait in this step; returns the token of lock {@code of}. */
    private FencingToken grantGroup(SessionRecord session, LockRecord.Waiter waiter, String of, List<Event> events) {
        FencingToken asked = null;
        for (String name : waiter.group()) {
            LockRecord record = state.locks.get(name);
            record.waiters.remove(session.id);
            session.removeWaiting(name);
            state.waiterCount--;
            FencingToken token = state.issue(record, session, waiter.requestId(), LockMode.EXCLUSIVE, events);
            asked = name.equals(of) ? token : asked;
        }
        return asked;
    }
}
