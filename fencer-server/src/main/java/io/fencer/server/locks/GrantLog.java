package io.fencer.server.locks;

import io.fencer.core.InvalidArgumentException;
import io.fencer.lock.Event;
import io.fencer.server.raft.AppliedListener;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Logs every grant at INFO under {@value #LOGGER}, one line naming the token, the holder's session and the identity
 * that opened it: {@code granted orders#42 to session 7 (identity 'worker-3')}. A fenced resource's refusal names the
 * token it refused (the store's refusal line, an adapter's exception), so joining that token to this line says whose
 * write was refused.
 *
 * <p>Every peer logs the grants it applies, not only the leader: leadership moves, and any one peer's log then holds
 * every grant. A peer that restarts applies again the entries after its last snapshot and logs their grants again,
 * with the same tokens. Identities and lock names are logged {@link InvalidArgumentException#printable printable},
 * so a name cannot forge a line.
 */
public final class GrantLog implements AppliedListener {
    /** The logger's name: set it to WARN to leave grants out of the log. */
    public static final String LOGGER = "io.fencer.server.grants";

    private static final Logger LOG = LoggerFactory.getLogger(LOGGER);

    @Override
    public void onApplied(List<Event> events) {
        if (!LOG.isInfoEnabled()) {
            return;
        }
        for (Event event : events) {
            if (event instanceof Event.Granted granted) {
                LOG.info("granted {} to session {} (identity '{}')",
                        InvalidArgumentException.printable(granted.token().toString()), granted.sessionId(),
                        InvalidArgumentException.printable(granted.holderIdentity()));
            }
        }
    }
}
