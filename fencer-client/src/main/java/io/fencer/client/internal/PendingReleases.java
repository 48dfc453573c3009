package io.fencer.client.internal;

import io.fencer.api.v1.DurableMark;
import io.fencer.core.FencingToken;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

/**
 * The releases of one session that the service answered before they were durable, kept until a durable mark
 * confirms them (same incarnation, sequence reached) or calls for re-sending them (another incarnation: the peer
 * restarted, and a release still in its queue then was lost). Re-sending is harmless: a release that did apply answers
 * NOT_HOLDER and changes nothing, since a token releases only its own grant. At most {@link #PENDING_MAX} are kept;
 * with none left the session asks for answers once durable. Thread-safe.
 */
final class PendingReleases {
    /** The most releases kept unconfirmed; a durable mark confirms them within a commit on a working peer. */
    static final int PENDING_MAX = 256;

    /** One release: its token, and where it was queued; a null incarnation re-sends at the next mark of any. */
    private record Pending(FencingToken token, String incarnation, long sequence) {}

    private final List<Pending> pending = new ArrayList<>(); // guarded by this

    /** True while another release answered early can be kept. */
    synchronized boolean hasRoom() {
        return pending.size() < PENDING_MAX;
    }

    /** Keeps {@code token}, answered before durable at {@code sequence} of {@code incarnation}. */
    synchronized void add(FencingToken token, String incarnation, long sequence) {
        if (sequence <= 0) {
            throw new IllegalArgumentException("a pending release's sequence must be positive: " + sequence);
        }
        pending.add(new Pending(token, incarnation, sequence));
    }

    /** Keeps {@code token}, whose re-sending failed, to re-send at the next mark whatever its incarnation. */
    synchronized void retry(FencingToken token) {
        if (pending.size() < PENDING_MAX) {
            pending.add(new Pending(token, null, Long.MAX_VALUE));
        }
    }

    /**
     * Drops the releases {@code mark} confirms; removes and returns those it shows may be lost, to re-send. A mark
     * without an incarnation (a peer that does not tell) decides nothing.
     */
    synchronized List<FencingToken> observe(DurableMark mark) {
        if (pending.isEmpty() || mark.getIncarnation().isEmpty()) {
            return List.of();
        }
        List<FencingToken> resend = new ArrayList<>();
        for (Iterator<Pending> it = pending.iterator(); it.hasNext(); ) {
            Pending release = it.next();
            if (!mark.getIncarnation().equals(release.incarnation)) {
                resend.add(release.token);
                it.remove();
            } else if (mark.getSequence() >= release.sequence) {
                it.remove();
            }
        }
        return resend;
    }

    /** True when a release of {@code token}'s lock at or above its value is kept unconfirmed. */
    synchronized boolean covers(FencingToken token) {
        for (Pending release : pending) {
            if (release.token.lock().equals(token.lock()) && release.token.value() >= token.value()) {
                return true;
            }
        }
        return false;
    }

    /** Forgets every release: the session ended, and its end released its locks. */
    synchronized void clear() {
        pending.clear();
    }

    synchronized int size() {
        return pending.size();
    }
}
