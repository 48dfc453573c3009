package io.fencer.core;

/**
 * A Watch asked to resume from a revision older than the oldest event the server still keeps: the events in between
 * are gone from its bounded history (or were applied before the server's last restart). {@link #oldestRevision()}
 * names the oldest revision from which the history is complete; re-read the state (Describe, List) and watch from
 * there.
 */
public final class RevisionOutOfRangeException extends FencerException {
    private static final long serialVersionUID = 1L;

    private final long requestedRevision;
    private final long oldestRevision;

    public RevisionOutOfRangeException(long requestedRevision, long oldestRevision) {
        super("from_revision " + requestedRevision + " is older than the oldest revision kept, " + oldestRevision
                + ": the events in between are no longer in this server's history");
        this.requestedRevision = requestedRevision;
        this.oldestRevision = oldestRevision;
    }

    /** Returns the revision the watch asked to start from. */
    public long requestedRevision() {
        return requestedRevision;
    }

    /** Returns the oldest revision from which the server still has every event. */
    public long oldestRevision() {
        return oldestRevision;
    }

    @Override
    public ErrorReason reason() {
        return ErrorReason.OUT_OF_RANGE;
    }
}
