package io.fencer.s3;

import io.fencer.core.FencingToken;
import io.fencer.core.StaleTokenException;
import java.util.Optional;

/**
 * A fenced bucket refused a write or a delete because its scope has accepted a newer token (or, under
 * {@link io.fencer.core.FencePolicy#STRICT}, the same one): the grant the token came from was superseded, most likely
 * while its holder was paused past its lease. The fence and the current object are as the newer holder left them.
 *
 * <p>{@link #atCommit()} tells where the refusal came: at the token check, before anything was written, or at the
 * commit, when the fence had changed since this write read it (the store's {@code If-Match} failed) and the newer
 * fence no longer admitted the token. {@link #diagnose()} says it in a sentence.
 */
public final class StaleObjectWriteException extends StaleTokenException {
    private static final long serialVersionUID = 1L;

    private final String name;
    private final boolean atCommit;
    private final long currentWriter;

    StaleObjectWriteException(StaleTokenException refusal, String name, boolean atCommit, long currentWriter) {
        super(refusal);
        this.name = name;
        this.atCommit = atCommit;
        this.currentWriter = currentWriter;
    }

    /** Returns the name of the object the refused write or delete was for. */
    public String name() {
        return name;
    }

    /** Returns the refused token. */
    public FencingToken token() {
        return new FencingToken(scope(), presented());
    }

    /** Returns the scope's accepted token at the refusal. */
    public FencingToken acceptedToken() {
        return new FencingToken(scope(), accepted());
    }

    /**
     * Returns true when the write had passed the token check and created its data object, and lost its commit to a
     * newer holder's: the data object was deleted again, nothing was committed.
     */
    public boolean atCommit() {
        return atCommit;
    }

    /** Returns the token whose write committed the current content of {@link #name()}, or empty when none did. */
    public Optional<FencingToken> currentWriter() {
        return currentWriter == FencingToken.NONE ? Optional.empty()
                : Optional.of(new FencingToken(scope(), currentWriter));
    }

    /** Explains the refusal in a sentence: which token, refused where, superseded by which. */
    public String diagnose() {
        String where = atCommit
                ? "passed the token check, but before its commit the fence was replaced by a holder of "
                        + acceptedToken() + " (the store refused the commit's If-Match); its data object was deleted"
                : "was refused at the token check, before anything was written: the fence had already accepted "
                        + acceptedToken();
        String current = currentWriter().map(w -> "; '" + name + "' is now the content written under " + w)
                .orElse("; '" + name + "' has no committed content");
        return "write of '" + name + "' under " + token() + " " + where + current + ". The grant of " + token()
                + " was superseded, most likely while its holder was paused past its lease; ask the lock service"
                + " (Validate) whether it still holds the lock before retrying with a new grant";
    }
}
