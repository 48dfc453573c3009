package io.fencer.server.locks;

import io.fencer.core.InvalidArgumentException;
import io.fencer.lock.Event;
import io.fencer.server.raft.AppliedListener;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Logs every grant at INFO under {@value #LOGGER}, one clause naming the token, the holder's session and the identity
 * that opened it: {@code granted orders#42 to session 7 (identity 'worker-3')}. The grants of one applied entry share a
 * line, up to {@link #GRANTS_PER_LINE_MAX} of them, their clauses joined by {@code "; "}, so that every clause starts
 * with {@code granted <token> } after the logger's name or a {@code "; "}. A fenced resource's refusal names the token it
 * refused (the store's refusal line, an adapter's exception), so joining that token to its clause says whose write was
 * refused: {@code grep -E '(grants - |; )granted orders#41 '}.
 *
 * <p>Why a line per entry, not per grant: at tens of thousands of grants a second a line each cost the applying thread
 * a formatted time and a write to standard error per grant, about 6% of the throughput of 64 clients on their own
 * locks on one peer (docs/performance.md); an entry carries up to 256 commands, so lines are also capped at
 * {@link #LINE_CHARS_MAX} characters, under what log collectors split.
 *
 * <p>Every peer logs the grants it applies, not only the leader: leadership moves, and any one peer's log then holds
 * every grant. A peer that restarts applies again the entries after its last snapshot and logs their grants again,
 * with the same tokens. Identities and lock names are logged {@link InvalidArgumentException#printable printable}
 * and with {@code ;} escaped as they escape control characters, so a name can forge neither a line nor a clause.
 */
public final class GrantLog implements AppliedListener {
    /** The logger's name: set it to WARN to leave grants out of the log. */
    public static final String LOGGER = "io.fencer.server.grants";
    /** The most grants one line names. */
    static final int GRANTS_PER_LINE_MAX = 16;
    /** A line grows past this many characters by at most its last clause (a printable name is at most 300). */
    static final int LINE_CHARS_MAX = 4_096;

    private static final Logger LOG = LoggerFactory.getLogger(LOGGER);

    @Override
    public void onApplied(List<Event> events) {
        if (!LOG.isInfoEnabled()) {
            return;
        }
        StringBuilder line = new StringBuilder();
        int grants = 0;
        for (Event event : events) {
            if (!(event instanceof Event.Granted granted)) {
                continue;
            }
            if (grants == GRANTS_PER_LINE_MAX || line.length() >= LINE_CHARS_MAX) {
                LOG.info("{}", line);
                line.setLength(0);
                grants = 0;
            }
            if (grants > 0) {
                line.append("; ");
            }
            line.append("granted ").append(shown(granted.token().toString())).append(" to session ")
                    .append(granted.sessionId()).append(" (identity '").append(shown(granted.holderIdentity()))
                    .append("')");
            grants++;
        }
        if (grants > 0) {
            LOG.info("{}", line);
        }
    }

    /** Returns {@code text} as a line shows it: printable, and no {@code ;} that could start a forged clause. */
    private static String shown(String text) {
        return InvalidArgumentException.printable(text).replace(";", "\\u003b");
    }
}
