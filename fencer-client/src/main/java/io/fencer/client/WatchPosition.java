package io.fencer.client;

/**
 * A position in the lock service's log of lock events: {@code revision} is the Raft log index of the entry that
 * made an event, {@code ordinal} its place among that entry's lock events. A watch started from a position sees
 * every event at or after it, and none before.
 *
 * @param revision the log index; 0 (with ordinal 0) = {@link #NOW}, from the next entry applied
 * @param ordinal the place within the revision, from 0
 */
public record WatchPosition(long revision, int ordinal) implements Comparable<WatchPosition> {
    /** From the next entry the serving peer applies: no past events. */
    public static final WatchPosition NOW = new WatchPosition(0, 0);

    public WatchPosition {
        if (revision < 0 || ordinal < 0 || (revision == 0 && ordinal != 0)) {
            throw new IllegalArgumentException("no watch position: revision " + revision + ", ordinal " + ordinal);
        }
    }

    /** Returns the position right after this one: where to resume after the event at this position. */
    public WatchPosition next() {
        return new WatchPosition(revision, ordinal + 1);
    }

    @Override
    public int compareTo(WatchPosition other) {
        int byRevision = Long.compare(revision, other.revision);
        return byRevision != 0 ? byRevision : Integer.compare(ordinal, other.ordinal);
    }

    /** Returns {@code revision:ordinal}, the form the CLI's {@code --from} reads. */
    @Override
    public String toString() {
        return revision + ":" + ordinal;
    }

    /**
     * Reads {@code REVISION} (ordinal 0) or {@code REVISION:ORDINAL}.
     *
     * @throws IllegalArgumentException naming the text when it is neither
     */
    public static WatchPosition parse(String text) {
        try {
            int colon = text.indexOf(':');
            if (colon < 0) {
                return new WatchPosition(Long.parseLong(text), 0);
            }
            return new WatchPosition(Long.parseLong(text.substring(0, colon)),
                    Integer.parseInt(text.substring(colon + 1)));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("'" + text + "' is no watch position (REVISION or REVISION:ORDINAL)",
                    e);
        }
    }
}
