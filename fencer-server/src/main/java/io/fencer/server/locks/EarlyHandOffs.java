package io.fencer.server.locks;

import io.fencer.lock.Command;
import io.fencer.lock.HandOffView;
import io.fencer.server.raft.Proposer;
import io.fencer.server.raft.RaftLockStateMachine;
import io.fencer.server.raft.RaftNode;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Answers a waiter's grant when the release that makes it arrives, before that release is durable: an early
 * hand-off. On a group of one the token a release grants is known the moment it is queued, provided nothing queued
 * before it changes the lock's queue (the proposer's {@code HandOffGate} sees to that) and the lock's next waiter is a
 * plain exclusive wait whose calls here all take early answers. The waiter is then answered at once with the lock's
 * next token, and chains of hand-offs run at the clients' round trips while their entries are written in batches.
 *
 * <p>Each lock keeps the grants answered early whose releases have not applied, in token order: the next hand-off
 * starts from the last of them (its holder is the one releasing) and goes to the waiter after them in the applied
 * queue, at most {@code ahead} of the applied state. A grant answered early is lost if the peer crashes before its
 * release is durable; its client reports it lost, and the RaiseFloor the proposer sends first at every start keeps
 * its token from being granted again (locks.proto's {@code AcquireRequest.answer_before_durable}).
 */
final class EarlyHandOffs {
    /**
     * The most locks whose hand-offs are remembered: a lock's are pruned when its next release comes, and a lock
     * released no more would stay. Forgetting them all is safe: a release the state and the remembered hand-offs do
     * not show to be the holder's goes the usual way.
     */
    static final int LOCKS_REMEMBERED_MAX = 4_096;
    private final int ahead;
    private final RaftNode raft;
    private final Proposer proposer;
    private final RaftLockStateMachine stateMachine;
    private final PendingAcquires pending;
    /** Per lock, the grants answered early and not yet applied: {session, token}, oldest first. */
    private final Map<String, ArrayDeque<long[]>> answered = new HashMap<>(); // guarded by this
    /** The proposer's incarnation the grants in {@link #answered} were answered in. */
    private String incarnation = ""; // guarded by this

    /** The hand-off decided for one release: whom it grants, which token, and where its release was queued. */
    private record HandOff(long sessionId, long token, Proposer.EarlyRelease release) {}

    EarlyHandOffs(int ahead, RaftNode raft, Proposer proposer, RaftLockStateMachine stateMachine,
            PendingAcquires pending) {
        if (ahead < 0) {
            throw new IllegalArgumentException("grants ahead must not be negative: " + ahead);
        }
        this.ahead = ahead;
        this.raft = raft;
        this.proposer = proposer;
        this.stateMachine = stateMachine;
        this.pending = pending;
    }

    /**
     * Queues {@code release} and answers the grant it makes to its lock's next waiter at once, when that is known
     * (see the class doc); returns the queued release, whose future completes once it is applied (the releaser's own
     * answer waits for it), or null when the release must be proposed the usual way.
     */
    Proposer.EarlyRelease tryHandOff(Command.Release release) {
        // The proposer's flag first: a group of more peers never arms, and pays nothing more per release.
        if (ahead == 0 || !proposer.handOffsArmed() || raft.configurationSize() != 1 || !raft.isLeader()) {
            return null;
        }
        HandOff handOff = decide(release);
        if (handOff == null) {
            return null;
        }
        for (PendingAcquires.Waiter waiter : pending.takeHandOff(handOff.sessionId, release.lock(), handOff.token)) {
            waiter.handOff = handOff.release;
            waiter.outcome.complete(io.fencer.core.FencingToken.of(release.lockName(), handOff.token));
        }
        return handOff.release;
    }

    private synchronized HandOff decide(Command.Release release) {
        long ticket = proposer.handOffTicket(); // before the read: a command queued after it voids the ticket
        String current = proposer.durableMark().incarnation();
        if (!current.equals(incarnation)) {
            answered.clear(); // those of an earlier incarnation applied, or were lost with it
            pending.forgetHandOffs();
            incarnation = current;
        }
        if (answered.size() >= LOCKS_REMEMBERED_MAX && !answered.containsKey(release.lock())) {
            answered.clear();
        }
        Optional<HandOffView> view = stateMachine.readLocal(machine -> machine.handOffView(release, ahead + 1));
        if (view.isEmpty()) {
            return null;
        }
        ArrayDeque<long[]> chain = answered.computeIfAbsent(release.lock(), lock -> new ArrayDeque<>());
        long next = nextWaiter(release, view.get(), chain);
        if (next == 0 || !pending.handOffEligible(next, release.lock())) {
            if (chain.isEmpty()) {
                answered.remove(release.lock());
            }
            return null;
        }
        if (ticket < 0) {
            return null; // a command that may change a hand-off is queued, or the incarnation changed
        }
        long token = view.get().nextToken() + chain.size();
        Proposer.EarlyRelease queued = proposer.proposeHandOff(release, ticket);
        if (queued == null) {
            return null;
        }
        chain.addLast(new long[] {next, token});
        return new HandOff(next, token, queued);
    }

    /**
     * Returns the session {@code release} hands the lock to, or 0 when it cannot be told now: drops from
     * {@code chain} the grants the applied state holds already, checks that the rest are the queue's first waiters
     * with the tokens after the applied one, and that the releaser holds the lock under the release's token in the
     * state they make.
     */
    private long nextWaiter(Command.Release release, HandOffView view, ArrayDeque<long[]> chain) {
        while (!chain.isEmpty() && chain.peekFirst()[1] < view.nextToken()) {
            chain.pollFirst(); // applied: the release that made it has applied
        }
        List<Long> waiters = view.plainWaiters();
        int k = chain.size();
        if (k >= ahead || waiters.size() <= k) {
            return 0;
        }
        int i = 0;
        for (long[] grant : chain) {
            if (grant[0] != waiters.get(i) || grant[1] != view.nextToken() + i) {
                return 0; // the queue no longer starts with the grants answered: let the log decide
            }
            i++;
        }
        long holder = k == 0 ? view.holderSessionId() : chain.peekLast()[0];
        long holderToken = k == 0 ? view.holderToken() : chain.peekLast()[1];
        return holder == release.sessionId() && holderToken == release.token() ? waiters.get(k) : 0;
    }
}
