package io.fencer.server.watch;

import io.fencer.api.v1.LockEvent;
import io.fencer.core.FencerException;
import io.fencer.core.LimitExceededException;
import io.fencer.server.rpc.ErrorCatalogue;
import io.grpc.stub.ServerCallStreamObserver;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One Watch stream: a cursor into the {@link WatchHub}'s history, sending what matches its prefix while the
 * transport is ready (HTTP/2 flow control) and nothing while it is not. Woken by new events and by the transport
 * becoming ready; sends on the hub's sender thread. Synchronized: sends and the stream's end never interleave.
 */
final class WatchStream {
    private static final Logger LOG = LoggerFactory.getLogger(WatchStream.class);
    /** The most history events looked at per read: bounds both the hub's lock time and a send's overshoot. */
    private static final int SCAN_MAX = 256;

    private final WatchHub hub;
    private final ServerCallStreamObserver<LockEvent> call;
    private final String prefix;
    private final Executor sender;
    /** The quota identity that opened it, whose count of streams it is in. */
    private final String identity;
    /** Throws once the caller may no longer read the prefix (an ACL reload): checked before each batch. */
    private final Runnable access;
    private final AtomicBoolean scheduled = new AtomicBoolean();
    private long cursor; // guarded by this: the sequence number of the next history event to look at
    private LockEvent start; // guarded by this: the first message, null once sent
    private boolean closed; // guarded by this

    WatchStream(WatchHub hub, ServerCallStreamObserver<LockEvent> call, String prefix, long cursor, LockEvent start,
            Executor sender, WatchHub.Watcher watcher) {
        this.hub = hub;
        this.identity = watcher.identity();
        this.access = watcher.access();
        this.call = call;
        this.prefix = prefix;
        this.cursor = cursor;
        this.start = start;
        this.sender = sender;
        call.setOnCancelHandler(this::cancelled);
        call.setOnReadyHandler(this::wake);
    }

    String identity() {
        return identity;
    }

    /** Schedules a send of what is new, unless one is scheduled and has not started yet. */
    void wake() {
        if (scheduled.compareAndSet(false, true)) {
            try {
                sender.execute(this::send);
            } catch (RejectedExecutionException shutDown) {
                scheduled.set(false); // the hub closed: it ends the stream itself
            }
        }
    }

    private void send() {
        scheduled.set(false); // before reading: an event appended from now on wakes this stream again
        try {
            sendReady();
        } catch (RuntimeException e) {
            LOG.debug("watch stream ended while sending", e);
            synchronized (this) {
                closed = true;
            }
            hub.remove(this);
        }
    }

    private synchronized void sendReady() {
        while (!closed) {
            if (hub.evicted(cursor)) {
                endBehind(); // before waiting for the client: a stalled watcher learns it as soon as it reads
                return;
            }
            if (!call.isReady()) {
                return; // the client is not reading: onReady wakes this stream again
            }
            if (start != null) {
                call.onNext(start);
                start = null;
                continue;
            }
            WatchHub.Batch batch = hub.read(cursor, prefix, SCAN_MAX);
            if (batch.evicted()) {
                endBehind();
                return;
            }
            if (batch.nextSequence() == cursor) {
                return; // caught up: the next event wakes this stream
            }
            if (!batch.events().isEmpty() && !stillAllowed()) {
                return;
            }
            // Built here, not kept: the history holds the compact form (see LockEvents).
            batch.events().forEach(kept -> call.onNext(LockEvents.wire(kept)));
            cursor = batch.nextSequence();
        }
    }

    /** Returns true while the caller may read the prefix; else ends the stream with the refusal. Holding this. */
    private boolean stillAllowed() {
        try {
            access.run();
            return true;
        } catch (FencerException denied) {
            fail(denied);
            return false;
        }
    }

    private void endBehind() {
        hub.endedBehind();
        fail(new LimitExceededException("watchEventsKeptMax", hub.limits().eventsKeptMax(),
                "this watcher fell behind: its next event left the history of the last "
                        + hub.limits().eventsKeptMax() + " events (watchEventsKeptMax) before it was read"));
    }

    /** Ends the stream with {@code error}, once. */
    synchronized void fail(FencerException error) {
        if (closed) {
            return;
        }
        closed = true;
        hub.remove(this);
        try {
            call.onError(ErrorCatalogue.toStatusException(error));
        } catch (RuntimeException alreadyClosed) {
            LOG.debug("watch stream already closed", alreadyClosed);
        }
    }

    private synchronized void cancelled() {
        closed = true;
        hub.remove(this);
    }
}
