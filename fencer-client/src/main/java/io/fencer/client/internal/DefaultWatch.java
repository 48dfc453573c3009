package io.fencer.client.internal;

import io.fencer.api.errors.WireErrors;
import io.fencer.api.v1.WatchRequest;
import io.fencer.client.LockEvent;
import io.fencer.client.Watch;
import io.fencer.client.WatchListener;
import io.fencer.client.WatchPosition;
import io.fencer.core.FencerException;
import io.fencer.core.InternalException;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LimitExceededException;
import io.fencer.core.UnavailableException;
import io.grpc.Status;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import java.util.LinkedHashSet;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * A watch over one Watch stream at a time: it keeps the position after the last event delivered and, when the stream
 * breaks for a reason a retry can cure, opens a new one from there (on the same peer, or the next one when that peer
 * is unreachable, refuses the resume, or failed {@link #FAILURES_PER_PEER_MAX} streams in a row), after a backoff
 * that grows while attempts fail. Each stream has a generation; messages of a stream that was replaced are ignored,
 * so an event is never delivered twice.
 */
final class DefaultWatch implements Watch {
    private static final System.Logger LOG = System.getLogger(DefaultWatch.class.getName());
    private static final long BACKOFF_MILLIS_MIN = 50;
    private static final long BACKOFF_MILLIS_MAX = 2_000;
    /**
     * How many resumes in a row peers may refuse (behind the position, or at their watch limit) before the watch ends:
     * with the backoff, about 5 s, each refusal moving to the next peer. A peer that lags catches up within the
     * entries it was behind; a group none of whose peers reaches the position (restored from an older backup) never
     * does, and its watcher must hear so rather than wait for ever.
     */
    static final int REFUSED_RESUMES_MAX = 8;
    /**
     * How many streams in a row may fail DEADLINE_EXCEEDED or CANCELLED on one peer (a watch stream carries no
     * deadline: a proxy, a peer shutting down, or a transport that gave up) before the next stream goes to the next
     * peer, which serves the same events.
     */
    static final int FAILURES_PER_PEER_MAX = 3;
    /**
     * How many streams in a row may fail so, with no stream accepted nor event delivered in between, before the watch
     * ends (at least {@link #FAILURES_PER_PEER_MAX} per known peer): with the backoff, about 25 s.
     */
    static final int FAILED_STREAMS_MAX = 16;

    /** Runs a task after a delay: the watch's backoff, which tests drive without waiting. */
    @FunctionalInterface
    interface Delays {
        Delays SYSTEM = (delayMillis, task) -> CompletableFuture.delayedExecutor(delayMillis, TimeUnit.MILLISECONDS)
                .execute(task);

        void after(long delayMillis, Runnable task);
    }

    private final Router router;
    private final String prefix;
    private final WatchListener listener;
    private final Consumer<DefaultWatch> onEnded;
    private final CompletableFuture<WatchPosition> started = new CompletableFuture<>();
    private final Object lock = new Object();
    private WatchPosition position; // guarded by lock: where the next stream starts
    /** True once a server named a position: a later "future revision" refusal is a lagging peer, not bad input. */
    private boolean positionFromServer; // guarded by lock
    private String endpoint; // guarded by lock
    private int generation; // guarded by lock
    private ClientCallStreamObserver<WatchRequest> call; // guarded by lock
    private long backoffMillis = BACKOFF_MILLIS_MIN; // guarded by lock
    /** Resumes refused in a row by a peer that answered (none accepted since), and by which peers. */
    private int refusedResumes; // guarded by lock
    private final Set<String> refusedBy = new LinkedHashSet<>(); // guarded by lock
    /** Streams failed DEADLINE_EXCEEDED or CANCELLED in a row (none accepted since), on the peer and on all. */
    private int failuresOnPeer; // guarded by lock
    private int failedStreams; // guarded by lock
    private final Set<String> failedOn = new LinkedHashSet<>(); // guarded by lock
    private final Delays delays;
    private boolean closed; // guarded by lock

    DefaultWatch(Router router, String prefix, WatchPosition from, WatchListener listener,
            Consumer<DefaultWatch> onEnded) {
        this(router, prefix, from, listener, onEnded, Delays.SYSTEM);
    }

    DefaultWatch(Router router, String prefix, WatchPosition from, WatchListener listener,
            Consumer<DefaultWatch> onEnded, Delays delays) {
        this.delays = Objects.requireNonNull(delays, "delays");
        this.router = router;
        this.prefix = Objects.requireNonNull(prefix, "prefix");
        this.position = Objects.requireNonNull(from, "from");
        this.listener = Objects.requireNonNull(listener, "listener");
        this.onEnded = onEnded;
        this.endpoint = router.current();
    }

    /** Completes with the first stream's start position once a server accepted the watch. */
    CompletableFuture<WatchPosition> started() {
        return started;
    }

    /** Opens a stream from the current position, unless closed. */
    void connect() {
        synchronized (lock) {
            if (closed) {
                return;
            }
            int mine = ++generation;
            WatchRequest request = WatchRequest.newBuilder().setPrefix(prefix).setFromRevision(position.revision())
                    .setFromOrdinal(position.ordinal()).build();
            try {
                router.asyncStub(endpoint).watch(request, new Stream(mine));
            } catch (IllegalStateException clientClosed) {
                closed = true;
            }
        }
    }

    @Override
    public WatchPosition position() {
        synchronized (lock) {
            return position;
        }
    }

    @Override
    public void close() {
        ClientCallStreamObserver<WatchRequest> open;
        synchronized (lock) {
            if (closed) {
                return;
            }
            closed = true;
            open = call;
        }
        if (open != null) {
            open.cancel("the watch was closed", null);
        }
        started.cancel(false);
        onEnded.accept(this);
    }

    /** Takes a message of stream {@code mine}; returns false when the watch moved on (closed, or a newer stream). */
    private boolean deliver(int mine, io.fencer.api.v1.LockEvent message) {
        LockEvent event;
        synchronized (lock) {
            if (closed || mine != generation) {
                return false;
            }
            backoffMillis = BACKOFF_MILLIS_MIN;
            refusedResumes = 0;
            refusedBy.clear();
            failuresOnPeer = 0;
            failedStreams = 0;
            failedOn.clear();
            WatchPosition at = at(message);
            if (message.getKind() == io.fencer.api.v1.LockEvent.Kind.KIND_START) {
                position = at.revision() == 0 ? position : at;
                positionFromServer = true;
                started.complete(at);
                return true;
            }
            if (at.compareTo(position) < 0) {
                return true; // already delivered: a server never sends one, but a resume must not repeat it
            }
            event = event(message, at);
            position = at.next();
        }
        try {
            listener.onEvent(event);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "watch listener failed on " + event, e);
        }
        return true;
    }

    /** Resumes after a failure a retry can cure, or ends the watch with it. */
    private void failed(int mine, Throwable failure) {
        FencerException error = failure instanceof FencerException fencer ? fencer : WireErrors.toException(failure);
        ClientCallStreamObserver<WatchRequest> broken;
        synchronized (lock) {
            if (closed || mine != generation) {
                return;
            }
            broken = call;
            call = null;
            FencerException givenUp = resumable(failure, error) ? moveOn(failure, error) : error;
            if (givenUp == null) {
                long delayMillis = backoffMillis;
                backoffMillis = Math.min(BACKOFF_MILLIS_MAX, backoffMillis * 2);
                LOG.log(System.Logger.Level.DEBUG, "watch of ''{0}'' resumes from {1} on {2} in {3} ms: {4}", prefix,
                        position, endpoint, delayMillis, error.getMessage());
                delays.after(delayMillis, this::connect);
                return;
            }
            error = givenUp;
            closed = true;
        }
        if (broken != null) {
            broken.cancel("the watch ended: " + error.getMessage(), null); // a no-op when the stream is over
        }
        started.completeExceptionally(error);
        onEnded.accept(this);
        try {
            listener.onEnded(error);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.WARNING, "watch listener failed on its end", e);
        }
    }

    /**
     * Picks the peer the next stream goes to, after a failure a retry can cure: another one when the peer went away
     * (it serves the same events), or when it refused the resume, for the next peer may have applied the position,
     * or have room, while this one may stay behind for good; or when streams failed on the way (cancelled, timed out)
     * {@link #FAILURES_PER_PEER_MAX} times in a row there. Returns null to resume, or the error that ends the watch
     * once {@link #REFUSED_RESUMES_MAX} resumes in a row were refused, or {@link #FAILED_STREAMS_MAX} streams in a
     * row failed on the way (each bound at least one peer's share per known peer). Called under the lock.
     */
    private FencerException moveOn(Throwable failure, FencerException error) {
        if (Status.fromThrowable(failure).getCode() == Status.Code.UNAVAILABLE) {
            moveTo(router.onFailure(endpoint, failure));
            return null;
        }
        if (Router.isRetryable(failure)) {
            return failedOnTheWay(error);
        }
        refusedBy.add(endpoint);
        refusedResumes++;
        if (refusedResumes >= Math.max(REFUSED_RESUMES_MAX, router.endpoints().size())) {
            return new UnavailableException("watch of '" + InvalidArgumentException.printable(prefix)
                    + "' cannot resume from " + position + ": " + refusedResumes + " resumes in a row were refused"
                    + " (by " + String.join(", ", refusedBy) + "); last refusal: " + error.getMessage(), error);
        }
        moveTo(router.after(endpoint));
        return null;
    }

    /**
     * Counts a stream that failed DEADLINE_EXCEEDED or CANCELLED: the same peer may serve the next one, but not
     * without bound, since a peer behind a proxy that cuts its streams would hold the watch silent for ever.
     */
    private FencerException failedOnTheWay(FencerException error) {
        failedOn.add(endpoint);
        failedStreams++;
        if (failedStreams >= Math.max(FAILED_STREAMS_MAX, FAILURES_PER_PEER_MAX * router.endpoints().size())) {
            return new UnavailableException("watch of '" + InvalidArgumentException.printable(prefix)
                    + "' cannot resume from " + position + ": " + failedStreams + " streams in a row failed before"
                    + " any was accepted (on " + String.join(", ", failedOn) + "); last failure: "
                    + error.getMessage(), error);
        }
        if (++failuresOnPeer >= FAILURES_PER_PEER_MAX) {
            failuresOnPeer = 0; // the next peer's count; with one peer known, this one's again
            moveTo(router.after(endpoint));
        }
        return null;
    }

    private void moveTo(String next) {
        if (!next.equals(endpoint)) {
            failuresOnPeer = 0;
        }
        endpoint = next;
    }

    /**
     * Returns true when a new stream from the same position may succeed: the transport failed or a peer stopped,
     * a limit was reached (the peer's watchers, or this watch fell behind: its resume then learns whether the
     * events are still there), or a lagging peer has not applied a position another peer named yet.
     */
    private boolean resumable(Throwable failure, FencerException error) {
        if (Router.isRetryable(failure) || error instanceof LimitExceededException) {
            return true;
        }
        return positionFromServer && error instanceof InvalidArgumentException invalid
                && "from_revision".equals(invalid.field());
    }

    private static WatchPosition at(io.fencer.api.v1.LockEvent message) {
        if (message.getRevision() < 0 || message.getOrdinal() < 0) {
            throw new InternalException("the server sent an event at position " + message.getRevision() + ":"
                    + message.getOrdinal());
        }
        return message.getRevision() == 0 ? WatchPosition.NOW
                : new WatchPosition(message.getRevision(), message.getOrdinal());
    }

    private static LockEvent event(io.fencer.api.v1.LockEvent message, WatchPosition at) {
        LockEvent.Kind kind = switch (message.getKind()) {
            case KIND_QUEUED -> LockEvent.Kind.QUEUED;
            case KIND_GRANTED -> LockEvent.Kind.GRANTED;
            case KIND_RELEASED -> LockEvent.Kind.RELEASED;
            case KIND_EXPIRED -> LockEvent.Kind.EXPIRED;
            case KIND_WAIT_ENDED -> LockEvent.Kind.WAIT_ENDED;
            default -> throw new InternalException("the server sent a lock event of kind " + message.getKind());
        };
        return new LockEvent(at, kind, message.getLock(),
                message.hasToken() ? Protos.token(message.getToken()) : null, message.getSessionId(),
                Protos.endCause(message.getEndCause()), message.getRevokedBy().isEmpty() ? null
                        : message.getRevokedBy(), message.getHolderIdentity().isEmpty() ? null
                        : message.getHolderIdentity());
    }

    @Override
    public String toString() {
        return "Watch['" + prefix + "' at " + position() + "]";
    }

    /** The observer of one stream of this watch. */
    private final class Stream implements ClientResponseObserver<WatchRequest, io.fencer.api.v1.LockEvent> {
        private final int mine;

        Stream(int mine) {
            this.mine = mine;
        }

        @Override
        public void beforeStart(ClientCallStreamObserver<WatchRequest> requestStream) {
            synchronized (lock) {
                if (mine == generation) {
                    call = requestStream;
                }
            }
        }

        @Override
        public void onNext(io.fencer.api.v1.LockEvent message) {
            try {
                deliver(mine, message);
            } catch (InternalException e) {
                failed(mine, e);
            }
        }

        @Override
        public void onError(Throwable failure) {
            failed(mine, failure);
        }

        @Override
        public void onCompleted() {
            failed(mine, Status.UNAVAILABLE.withDescription("the server ended the watch stream").asRuntimeException());
        }
    }
}
