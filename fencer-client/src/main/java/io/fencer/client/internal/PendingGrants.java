package io.fencer.client.internal;

import io.fencer.api.v1.DurableMark;
import io.fencer.core.FencingToken;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

/**
 * The grants of one session that the service answered before they were durable, kept provisional until a durable
 * mark confirms them (same incarnation, sequence reached) or shows they may be lost (another incarnation: the peer
 * restarted, or failed a log entry, before the release that grants them was durable). A lost grant may never have
 * taken effect, and a later grant of its lock carries a higher token; the session then reports it and gives the lock's
 * place up ({@link ProvisionalGrants}). At most {@link #PENDING_MAX} are kept; with none left the session's acquires
 * ask for answers once durable. Thread-safe.
 */
final class PendingGrants {
    /** The most grants kept provisional; a durable mark confirms them within a commit on a working peer. */
    static final int PENDING_MAX = 256;
    /** How many times giving a lost grant's place up is tried, one a mark, before it is left to the session's end. */
    static final int ATTEMPTS_MAX = 8;

    /**
     * A grant the marks show may be lost, and how many times giving its place up was tried before.
     *
     * @param attemptsBefore 0 when first found lost
     */
    record Lost(FencingToken token, int attemptsBefore) {}

    /** One grant: its token, and where its release was queued; a null incarnation returns at the next mark of any. */
    private record Pending(FencingToken token, String incarnation, long sequence, int attemptsBefore) {}

    private final List<Pending> pending = new ArrayList<>(); // guarded by this
    /**
     * The incarnation of the latest mark observed, null before any: a grant whose answer is read after a mark of
     * another incarnation (the marks of a keepalive and of the acquire's answer travel on different threads) is lost
     * at once, as that mark would have shown it.
     */
    private String lastIncarnation; // guarded by this

    /** True while another grant answered early can be kept. */
    synchronized boolean hasRoom() {
        return pending.size() < PENDING_MAX;
    }

    /**
     * Keeps {@code token}, answered before durable at {@code sequence} of {@code incarnation}; returns false, keeping
     * nothing, when a mark of another incarnation was observed already: the grant may be lost. Another answer of the
     * same grant (its holder acquiring again) keeps one entry, at the later sequence.
     */
    synchronized boolean add(FencingToken token, String incarnation, long sequence) {
        if (sequence <= 0) {
            throw new IllegalArgumentException("a pending grant's sequence must be positive: " + sequence);
        }
        if (lastIncarnation != null && !lastIncarnation.equals(incarnation)) {
            return false;
        }
        for (Iterator<Pending> it = pending.iterator(); it.hasNext(); ) {
            Pending grant = it.next();
            if (grant.token.equals(token) && incarnation.equals(grant.incarnation)) {
                sequence = Math.max(sequence, grant.sequence);
                it.remove();
            }
        }
        pending.add(new Pending(token, incarnation, sequence, 0));
        return true;
    }

    /**
     * Keeps {@code lost}, whose place could not be given up, to return at the next mark whatever its incarnation;
     * returns false, keeping nothing, after {@link #ATTEMPTS_MAX} attempts or with no room left.
     */
    synchronized boolean retry(Lost lost) {
        int attempts = lost.attemptsBefore + 1;
        if (attempts >= ATTEMPTS_MAX || pending.size() >= PENDING_MAX) {
            return false;
        }
        pending.add(new Pending(lost.token, null, Long.MAX_VALUE, attempts));
        return true;
    }

    /**
     * Drops the grants {@code mark} confirms; removes and returns those it shows may be lost. A mark without an
     * incarnation (a peer that does not tell) decides nothing.
     */
    synchronized List<Lost> observe(DurableMark mark) {
        if (mark.getIncarnation().isEmpty()) {
            return List.of();
        }
        lastIncarnation = mark.getIncarnation();
        List<Lost> lost = new ArrayList<>();
        for (Iterator<Pending> it = pending.iterator(); it.hasNext(); ) {
            Pending grant = it.next();
            if (!mark.getIncarnation().equals(grant.incarnation)) {
                lost.add(new Lost(grant.token, grant.attemptsBefore));
                it.remove();
            } else if (mark.getSequence() >= grant.sequence) {
                it.remove();
            }
        }
        return lost;
    }

    /** Forgets every grant: the session ended, and its end released its locks. */
    synchronized void clear() {
        pending.clear();
    }

    synchronized int size() {
        return pending.size();
    }
}
