package io.fencer.server.watch;

import io.fencer.api.v1.LockEvent;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LimitExceededException;
import io.fencer.core.RevisionOutOfRangeException;
import io.fencer.core.UnavailableException;
import io.fencer.lock.Event;
import io.fencer.server.raft.AppliedListener;
import io.fencer.server.watch.LockEvents.Kept;
import io.grpc.stub.ServerCallStreamObserver;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.LongAdder;

/**
 * The Watch service of one peer: a bounded history of the lock events this peer applied, each at its position
 * (revision = log index, ordinal = place among the entry's lock events), and the Watch streams that read it.
 *
 * <p>Why one shared history and a cursor per stream rather than a buffer per stream: a watcher that stops reading
 * then costs nothing but its cursor; it falls behind only when the history itself moves past its next event, and
 * is then ended with the limit that bounds the history ({@code watchEventsKeptMax}). Streams send on one thread of
 * their own ({@link #sender}) so that the apply thread only appends and wakes them.
 *
 * <p>Thread-safe: the history is guarded by {@link #lock}; the apply thread appends, streams read batches.
 */
public final class WatchHub implements AppliedListener, AutoCloseable {
    private final WatchLimits limits;
    private final Object lock = new Object();
    private final Kept[] ring; // guarded by lock
    private final Set<WatchStream> streams = ConcurrentHashMap.newKeySet();
    private final Map<String, Integer> streamsByIdentity = new HashMap<>(); // guarded by lock
    private final Executor sender;
    /** The sender's thread, stopped at close; null when the sender is someone else's (tests). */
    private final ExecutorService senderThread;
    private final LongAdder behindEnds = new LongAdder();
    private long firstSequence; // guarded by lock: the sequence number of the oldest event kept
    private long nextSequence; // guarded by lock: the sequence number the next event gets
    /** The oldest revision from which every lock event is kept. */
    private long oldestRevision; // guarded by lock
    /** The revision of the last entry applied here: a Watch may start at most at the next one. */
    private long appliedRevision; // guarded by lock
    private boolean closed; // guarded by lock

    /**
     * What one read of the history gave a stream: the events after its cursor that match, and its next cursor; or
     * {@code evicted}, when the event at its cursor has left the history (then no events).
     */
    record Batch(List<Kept> events, long nextSequence, boolean evicted) {}

    /** Returns a hub keeping at most {@code limits.eventsKeptMax()} events; {@code name} names its thread. */
    public WatchHub(WatchLimits limits, String name) {
        this(limits, Executors.newSingleThreadExecutor(runnable -> {
            Thread thread = new Thread(runnable, "fencer-watch-" + name);
            thread.setDaemon(true);
            return thread;
        }));
    }

    /** Returns a hub whose streams send on {@code sender}: a direct executor makes sends synchronous (tests). */
    WatchHub(WatchLimits limits, Executor sender) {
        this.limits = Objects.requireNonNull(limits, "limits");
        this.ring = new Kept[limits.eventsKeptMax()];
        this.sender = Objects.requireNonNull(sender, "sender");
        this.senderThread = sender instanceof ExecutorService service ? service : null;
    }

    /** Returns the limits this hub enforces. */
    public WatchLimits limits() {
        return limits;
    }

    /** Never called: the state machine hands events with their revision to {@link #onApplied(long, List)}. */
    @Override
    public void onApplied(List<Event> events) {
        throw new UnsupportedOperationException("a watch needs the revision of the events");
    }

    @Override
    public void onApplied(long revision, List<Event> events) {
        boolean appended = false;
        synchronized (lock) {
            appliedRevision = Math.max(appliedRevision, revision);
            int ordinal = 0;
            for (Event event : events) {
                Optional<Kept> kept = LockEvents.of(event, revision, ordinal);
                if (kept.isPresent()) {
                    append(kept.get());
                    ordinal++;
                    appended = true;
                }
            }
        }
        if (appended) {
            streams.forEach(WatchStream::wake);
        }
    }

    private void append(Kept kept) {
        if (nextSequence - firstSequence == ring.length) {
            Kept evicted = ring[slot(firstSequence)];
            ring[slot(firstSequence)] = null;
            firstSequence++;
            // Some events of the evicted one's revision may remain, but that revision is no longer complete.
            oldestRevision = Math.max(oldestRevision, evicted.revision() + 1);
        }
        ring[slot(nextSequence)] = kept;
        nextSequence++;
    }

    /**
     * Forgets the history when the state jumps to a snapshot at {@code index}: the events of the entries it covers
     * were never seen here. Streams open then (a follower that installed the leader's snapshot) have missed them and
     * are ended UNAVAILABLE, so that they resume where the events are, or re-read the state.
     */
    @Override
    public void onStateLoaded(long index) {
        synchronized (lock) {
            for (long sequence = firstSequence; sequence < nextSequence; sequence++) {
                ring[slot(sequence)] = null;
            }
            firstSequence = nextSequence;
            oldestRevision = index + 1;
            appliedRevision = index;
        }
        for (WatchStream stream : streams) {
            stream.fail(new UnavailableException("this peer loaded a snapshot at revision " + index
                    + " and never saw the events before it: resume from your last revision on another peer"));
        }
    }

    /**
     * Opens a Watch stream on {@code call} from position ({@code fromRevision}, {@code fromOrdinal}); revision 0 =
     * from the next entry applied. The caller checked the prefix and the caller's permission.
     *
     * @throws RevisionOutOfRangeException when the history no longer holds every event from that position
     * @throws InvalidArgumentException when the revision is later than the next entry this peer applies
     * @throws LimitExceededException when {@code watchersMax} streams are open, or the watcher's quota of them
     */
    public void watch(String prefix, long fromRevision, int fromOrdinal, ServerCallStreamObserver<LockEvent> call,
            Watcher watcher) {
        WatchStream stream;
        synchronized (lock) {
            if (closed) {
                throw new UnavailableException("the server is shutting down");
            }
            if (streams.size() >= limits.watchersMax()) {
                throw new LimitExceededException("watchersMax", limits.watchersMax(), "cannot open a Watch: "
                        + streams.size() + " are open on this peer, watchersMax is " + limits.watchersMax());
            }
            int open = streamsByIdentity.getOrDefault(watcher.identity(), 0);
            if (open >= watcher.quota()) {
                throw new LimitExceededException("watchersPerIdentityMax", watcher.quota(), watcher.identity(),
                        "identity '" + InvalidArgumentException.printable(watcher.identity()) + "' has " + open
                        + " Watch streams open on this peer; 1 more would pass its quota watchersPerIdentityMax of "
                        + watcher.quota() + ": end those it no longer reads, or ask the operator for a higher quota");
            }
            long startRevision = fromRevision == 0 ? appliedRevision + 1 : fromRevision;
            int startOrdinal = fromRevision == 0 ? 0 : fromOrdinal;
            checkStart(fromRevision, fromOrdinal, startRevision);
            stream = new WatchStream(this, call, prefix, firstSequenceFrom(startRevision, startOrdinal),
                    LockEvents.start(startRevision, startOrdinal), sender, watcher);
            streams.add(stream);
            streamsByIdentity.merge(watcher.identity(), 1, Integer::sum);
        }
        stream.wake();
    }

    private void checkStart(long fromRevision, int fromOrdinal, long startRevision) {
        if (fromRevision == 0 && fromOrdinal != 0) {
            throw new InvalidArgumentException("from_ordinal", Integer.toUnsignedString(fromOrdinal),
                    "from_ordinal " + Integer.toUnsignedString(fromOrdinal) + " needs a from_revision");
        }
        if (fromRevision < 0 || startRevision > appliedRevision + 1) {
            String revision = Long.toUnsignedString(fromRevision);
            throw new InvalidArgumentException("from_revision", revision, "from_revision " + revision
                    + " is in the future: this peer has applied up to revision " + appliedRevision
                    + ", so a Watch can start at " + (appliedRevision + 1) + " at the latest");
        }
        if (startRevision < oldestRevision) {
            throw new RevisionOutOfRangeException(startRevision, oldestRevision);
        }
    }

    /** Returns the sequence number of the first kept event at or after the position; the history is in order. */
    private long firstSequenceFrom(long revision, int ordinal) {
        long low = firstSequence;
        long high = nextSequence;
        while (low < high) {
            long middle = (low + high) >>> 1;
            Kept kept = ring[slot(middle)];
            boolean before = kept.revision() < revision
                    || (kept.revision() == revision && Integer.compareUnsigned(kept.ordinal(), ordinal) < 0);
            if (before) {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        return low;
    }

    /** Returns true when the event at {@code sequence} has left the history (or the history was reset past it). */
    boolean evicted(long sequence) {
        synchronized (lock) {
            return sequence < firstSequence;
        }
    }

    /**
     * Returns the events matching {@code prefix} among at most {@code scanMax} events from {@code sequence} on,
     * and the sequence after the last one looked at; or an evicted batch when the event at {@code sequence} is
     * gone. Checked here, under the lock, and not only before: an eviction between a check and this read would
     * otherwise skip the evicted events silently.
     */
    Batch read(long sequence, String prefix, int scanMax) {
        synchronized (lock) {
            if (sequence < firstSequence) {
                return new Batch(List.of(), sequence, true);
            }
            long end = Math.min(nextSequence, sequence + scanMax);
            List<Kept> events = new ArrayList<>();
            for (long next = sequence; next < end; next++) {
                Kept kept = ring[slot(next)];
                if (kept.lock().startsWith(prefix)) {
                    events.add(kept);
                }
            }
            return new Batch(events, Math.max(end, sequence), false);
        }
    }

    /** Forgets an ended stream, and counts it no more against its identity's quota. */
    void remove(WatchStream stream) {
        synchronized (lock) {
            if (streams.remove(stream)) {
                streamsByIdentity.computeIfPresent(stream.identity(), (identity, open) -> open == 1 ? null : open - 1);
            }
        }
    }

    /**
     * Who opens a Watch: its quota identity ({@code io.fencer.server.rpc.Identities#quotaIdentity()}), that
     * identity's quota of streams on this peer ({@code watchersPerIdentityMax}), and its access check, run again
     * before every batch the stream sends: it throws (a {@link io.fencer.core.PermissionDeniedException}) once the
     * caller may no longer read the prefix, so that an ACL reload reaches open streams as it reaches new ones.
     */
    public record Watcher(String identity, int quota, Runnable access) {
        public Watcher {
            Objects.requireNonNull(identity, "identity");
            Objects.requireNonNull(access, "access");
        }

        /** A watcher whose access is never withdrawn (no ACL). */
        public Watcher(String identity, int quota) {
            this(identity, quota, () -> { });
        }
    }

    /** Counts one stream ended because the history moved past its next event. */
    void endedBehind() {
        behindEnds.increment();
    }

    /**
     * Exports the Watch service's gauges and counter to {@code registry}: the streams open, the events kept, and the
     * streams ended for falling behind the history (a watcher that stopped reading, or a history too short).
     */
    public void register(MeterRegistry registry) {
        Gauge.builder("fencer.watch.streams", this, WatchHub::streamCount)
                .description("Watch streams open on this peer").register(registry);
        Gauge.builder("fencer.watch.events.kept", this, WatchHub::eventsKept)
                .description("Lock events this peer keeps for Watch (at most watchEventsKeptMax)").register(registry);
        FunctionCounter.builder("fencer.watch.behind.ends", behindEnds, LongAdder::sum)
                .description("Watch streams ended RESOURCE_EXHAUSTED because the history moved past their next event")
                .register(registry);
    }

    private long eventsKept() {
        synchronized (lock) {
            return nextSequence - firstSequence;
        }
    }

    /** Returns how many Watch streams are open (for tests and metrics). */
    public int streamCount() {
        return streams.size();
    }

    private int slot(long sequence) {
        return (int) (sequence % ring.length);
    }

    /**
     * Ends every open stream with {@code error} (clients resume on another peer); new streams may still open, so the
     * caller refuses them itself while the cause lasts (a halt of this peer's apply).
     */
    public void failStreams(UnavailableException error) {
        for (WatchStream stream : streams) {
            stream.fail(error);
        }
    }

    /** Ends every stream UNAVAILABLE (clients resume on another peer) and stops the sender thread. */
    @Override
    public void close() {
        synchronized (lock) {
            closed = true;
        }
        for (WatchStream stream : streams) {
            stream.fail(new UnavailableException("the server is shutting down"));
        }
        if (senderThread != null) {
            senderThread.shutdown();
        }
    }
}
