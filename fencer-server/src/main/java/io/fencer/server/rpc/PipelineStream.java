package io.fencer.server.rpc;

import com.google.protobuf.MessageLite;
import io.fencer.api.errors.WireErrors;
import io.fencer.api.v1.CallError;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LimitExceededException;
import io.fencer.core.UnavailableException;
import io.grpc.MethodDescriptor;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One client's Pipeline stream ({@code Locks.Pipeline}, {@code Store.Pipeline}): each request message is served
 * as the unary call it carries, by the service's own handler, through a {@link PipelinedCall} that stands in for
 * the unary call's observer; each answer goes back as one response message with the request's call id. Both
 * services use this one class; a {@link Dispatch} is what differs: it maps a service's messages to its handlers.
 *
 * <p>Why an adapter and not a second implementation: a pipelined call must behave exactly as a unary one (checks,
 * errors, waiting, idempotency, cancellation), so it runs the same code. Sends are serialized on the stream, since
 * answers complete on any thread (Raft apply, store workers, timers). Thread-safe.
 *
 * <p>Flow control, so that a client that keeps sending but stops reading cannot grow the server's memory: an answer
 * goes to the transport only while it {@linkplain ServerCallStreamObserver#isReady() is ready}; otherwise it waits
 * in this stream's queue, which the transport's {@code onReady} drains. The next request is read only while that
 * queue is empty and the transport ready, so such a client is held back by HTTP/2 flow control on its own side,
 * and the answers of what it still has in flight (at most {@value #CALLS_IN_FLIGHT_MAX} calls) are all that can
 * queue; reading also waits while those calls, answered as large as the largest answer yet, would not fit
 * {@value #ANSWER_BYTES_QUEUED_MAX} bytes. A stream whose queue would pass that many bytes all the same (its answers
 * grew, or came before any was sized) is ended RESOURCE_EXHAUSTED, reason LIMIT_EXCEEDED, and its calls in flight
 * are cancelled as at any stream end.
 *
 * @param <RequestT> the stream's request message
 * @param <ResponseT> the stream's response message
 */
public final class PipelineStream<RequestT, ResponseT extends MessageLite> implements StreamObserver<RequestT> {
    /** The most calls one stream may have in flight: a bound on the server's memory per client. */
    public static final int CALLS_IN_FLIGHT_MAX = 4096;
    /**
     * The most bytes of answers one stream may hold that its transport has not taken. The count needs no limit of
     * its own: reading stops while answers wait, so only calls already in flight can add to them, at most
     * {@link #CALLS_IN_FLIGHT_MAX} (and the refusal of the one request read meanwhile); but a store read's answer
     * can be a MiB. Above what a client that reads, with one call in flight per thread, reaches in a burst.
     */
    public static final int ANSWER_BYTES_QUEUED_MAX = 64 * 1024 * 1024;
    private static final Logger LOG = LoggerFactory.getLogger(PipelineStream.class);

    private final ServerCallStreamObserver<ResponseT> stream;
    private final Dispatch<RequestT, ResponseT> dispatch;
    private final BiConsumer<MethodDescriptor<?, ?>, Long> latencyNanos;
    /** Told once the stream has ended, however it ended. */
    private final Consumer<PipelineStream<?, ?>> onEnd;
    private final StreamFlow flow;
    private final Map<Long, PipelinedCall<?, ResponseT>> inFlight = new ConcurrentHashMap<>();
    /** Answers the transport was not ready for, oldest first. */
    private final ArrayDeque<ResponseT> queued = new ArrayDeque<>(); // guarded by this
    private long queuedBytes; // guarded by this
    /** {@code queued.size()}, readable without the lock: the next request is read only while it is 0. */
    private volatile int queuedCount; // written under this
    /** The largest answer sent or queued on this stream, in bytes: what a call in flight may yet add. */
    private volatile int answerBytesMax;
    /** True while no request is asked for, because answers cannot flow; whoever sets it false asks for one. */
    private final AtomicBoolean inboundPaused = new AtomicBoolean();
    /** Set once the stream has ended, however: no request is asked for after it. */
    private volatile boolean ended;
    private boolean closed; // guarded by this

    /**
     * The part of a Pipeline stream that differs between services: which unary handler serves each kind of call,
     * and how its answers are wrapped in the stream's response message.
     *
     * @param <RequestT> the stream's request message
     * @param <ResponseT> the stream's response message
     */
    public interface Dispatch<RequestT, ResponseT extends MessageLite> {
        /**
         * Serves one request message: cancels the call it names ({@link PipelineStream#cancel}), serves the call
         * it carries ({@link PipelineStream#serve}) or refuses it ({@link PipelineStream#refuse}).
         */
        void dispatch(RequestT request, PipelineStream<RequestT, ResponseT> stream);

        /** Returns the response that answers call {@code callId} with {@code error}. */
        ResponseT errorResponse(long callId, CallError error);
    }

    /**
     * Serves the stream {@code stream} with {@code dispatch}; call from the service's stream method, before it
     * returns (the transport's handlers can only be set then).
     *
     * @param latencyNanos told each call's method and latency when it is answered
     * @param onEnd told once the stream has ended, however it ended
     * @param flow the counters of this kind of stream
     */
    public PipelineStream(ServerCallStreamObserver<ResponseT> stream, Dispatch<RequestT, ResponseT> dispatch,
            BiConsumer<MethodDescriptor<?, ?>, Long> latencyNanos, Consumer<PipelineStream<?, ?>> onEnd,
            StreamFlow flow) {
        this.stream = stream;
        this.dispatch = dispatch;
        this.latencyNanos = latencyNanos;
        this.onEnd = onEnd;
        this.flow = flow;
        stream.setOnCancelHandler(this::end);
        stream.disableAutoRequest();
        stream.setOnReadyHandler(this::onReady);
        stream.request(1);
    }

    @Override
    public void onNext(RequestT request) {
        flow.requestRead();
        dispatch.dispatch(request, this);
        requestNext();
    }

    /**
     * Asks for the next request while answers flow, or pauses reading. Runs on the stream's callback thread after
     * each request, so at most one request is asked for at a time.
     */
    private void requestNext() {
        if (ended) {
            return;
        }
        if (answersFlow()) {
            stream.request(1);
            return;
        }
        inboundPaused.set(true);
        flow.paused();
        // The queue may have drained, the transport turned ready or the stream ended (on another thread) between
        // the test and the flag: look again, since whoever changed it may not have seen the flag.
        if (ended) {
            unpause();
        } else if (answersFlow()) {
            resumeReading();
        }
    }

    /** Asks for the next request if reading was paused; exactly one caller resumes a pause. */
    private void resumeReading() {
        if (unpause() && !ended) {
            stream.request(1);
        }
    }

    /** Clears the pause; returns true for the one caller that cleared it. */
    private boolean unpause() {
        if (inboundPaused.compareAndSet(true, false)) {
            flow.resumed();
            return true;
        }
        return false;
    }

    /** Returns true when an answer would go straight to the transport: nothing queued, the transport ready. */
    private boolean answersFlow() {
        return queuedCount == 0 && stream.isReady() && readAheadFits();
    }

    /**
     * Returns true while the calls in flight, were each answered with the largest answer seen yet, would fit the
     * queue's byte limit. Why: a client that pipelines many large store reads (and reads its answers, only more
     * slowly than they come) must be slowed to what fits, not ended; for lock calls and small values it never
     * binds. Before a stream's first answer nothing is known, and only {@link #CALLS_IN_FLIGHT_MAX} binds.
     */
    private boolean readAheadFits() {
        return (long) inFlight.size() * answerBytesMax < ANSWER_BYTES_QUEUED_MAX;
    }

    /** The transport can take answers again: hands it the queued ones, then reads on if they all went. */
    private void onReady() {
        synchronized (this) {
            drain();
        }
        if (inboundPaused.get() && answersFlow()) {
            resumeReading();
        }
    }

    /** Returns the response that answers call {@code callId} with {@code error}. */
    ResponseT errorResponse(long callId, CallError error) {
        return dispatch.errorResponse(callId, error);
    }

    /** Cancels the call in flight with {@code callId}, if any. */
    public void cancel(long callId) {
        PipelinedCall<?, ResponseT> call = inFlight.get(callId);
        if (call != null) {
            call.cancel();
        }
    }

    /**
     * Serves call {@code callId} with {@code handler}, the service's unary handler of {@code method}, and wraps its
     * answer with {@code answer}; or answers the call's refusal (a bad or duplicate call id, too many in flight).
     */
    public <CallRequestT, CallResponseT> void serve(long callId, MethodDescriptor<CallRequestT, CallResponseT> method,
            CallRequestT request, BiConsumer<CallRequestT, StreamObserver<CallResponseT>> handler,
            Function<CallResponseT, ResponseT> answer) {
        PipelinedCall<CallResponseT, ResponseT> call = start(callId, method, answer);
        if (call != null) {
            handler.accept(request, call);
        }
    }

    /**
     * Registers a new call whose answer {@code answer} wraps in a response, or answers its refusal and returns
     * null.
     */
    private <T> PipelinedCall<T, ResponseT> start(long callId, MethodDescriptor<?, T> method,
            Function<T, ResponseT> answer) {
        if (callId < 1) {
            refuse(callId, new InvalidArgumentException("call_id", Long.toUnsignedString(callId),
                    "call_id must be >= 1, got " + Long.toUnsignedString(callId)));
            return null;
        }
        if (inFlight.size() >= CALLS_IN_FLIGHT_MAX) {
            refuse(callId, new LimitExceededException("pipelineCallsInFlightMax", CALLS_IN_FLIGHT_MAX,
                    "the stream has " + CALLS_IN_FLIGHT_MAX + " calls in flight, the most allowed; call "
                            + callId + " is refused"));
            return null;
        }
        PipelinedCall<T, ResponseT> call = new PipelinedCall<>(this, callId, method, answer);
        // Counted before it is in the map: from there the stream's end may cancel and finish it on another thread.
        call.countOn(ReplySpin.Loop.current());
        if (inFlight.putIfAbsent(callId, call) != null) {
            call.uncount();
            refuse(callId, new InvalidArgumentException("call_id", Long.toString(callId),
                    "call_id " + callId + " is already in flight on this stream"));
            return null;
        }
        // A request read as the stream ends (a backlog end or a shutdown on another thread, or a message asked for
        // before it) must not be served: the end's cancel may have missed it, and a wait it started would hold a
        // queue place for a stream nobody reads. The end sets the flag, then cancels what is in the map; this puts,
        // then reads the flag: one of the two sees the other.
        if (ended) {
            if (inFlight.remove(callId, call)) {
                call.uncount();
            }
            return null;
        }
        return call;
    }

    /** Answers call {@code callId} with {@code error} at once. */
    public void refuse(long callId, RuntimeException error) {
        send(errorResponse(callId, callError(error)));
    }

    /** Returns the error as the unary call would have ended with it: its google.rpc.Status, with the detail. */
    static CallError callError(Throwable error) {
        return WireErrors.toCallError(ErrorCatalogue.toStatusException(error));
    }

    /**
     * Sends one answer, unless the stream has ended: to the transport when it is ready and nothing is queued before
     * it, else to the queue; an answer that would pass the queue's byte limit ends the stream instead.
     */
    void send(ResponseT response) {
        LimitExceededException exceeded;
        int bytes = response.getSerializedSize(); // memoized: the transport's framer asks for it again
        if (bytes > answerBytesMax) {
            answerBytesMax = bytes; // a race may keep a smaller one: the next larger answer raises it again
        }
        synchronized (this) {
            if (closed || stream.isCancelled()) {
                return;
            }
            if (queued.isEmpty() && stream.isReady()) {
                write(response); // the common case: the client reads, no queue
                exceeded = null;
            } else {
                exceeded = enqueue(response, bytes);
                if (exceeded == null) {
                    drain(); // the transport may have turned ready since its onReady last drained
                } else {
                    closeWith(exceeded);
                }
            }
        }
        if (exceeded != null) {
            flow.endedForBacklog();
            end();
        } else if (inboundPaused.get() && answersFlow()) {
            resumeReading();
        }
    }

    /** Queues {@code response} of {@code bytes}; returns the limit it would pass instead, when it would. */
    private LimitExceededException enqueue(ResponseT response, int bytes) {
        if (queuedBytes + bytes > ANSWER_BYTES_QUEUED_MAX) {
            return new LimitExceededException("pipelineAnswerBytesQueuedMax", ANSWER_BYTES_QUEUED_MAX,
                    "the client of this " + flow.stream() + " stream does not read its answers: " + queued.size()
                            + " answers of " + queuedBytes + " bytes wait for it and the next has " + bytes
                            + ", more than the " + ANSWER_BYTES_QUEUED_MAX + " bytes allowed; the stream is ended"
                            + " and its calls in flight are cancelled");
        }
        queued.addLast(response);
        queuedBytes += bytes;
        queuedCount = queued.size();
        flow.answerQueued(queued.size(), queuedBytes);
        return null;
    }

    /** Hands queued answers to the transport while it is ready. Called holding this. */
    private void drain() {
        int taken = 0;
        while (!queued.isEmpty() && stream.isReady()) {
            ResponseT response = queued.pollFirst();
            queuedBytes -= response.getSerializedSize();
            taken++;
            write(response);
        }
        forget(taken);
    }

    /** Drops the queued answers (the stream ends without them). Called holding this. */
    private void dropQueued() {
        int dropped = queued.size();
        queued.clear();
        queuedBytes = 0;
        forget(dropped);
    }

    private void forget(int answers) {
        if (answers > 0) {
            queuedCount = queued.size();
            flow.answersDequeued(answers);
        }
    }

    /** Hands one answer to the transport. Called holding this. */
    private void write(ResponseT response) {
        try {
            stream.onNext(response);
        } catch (RuntimeException e) {
            LOG.debug("pipeline stream ended before an answer", e);
        }
    }

    /** Ends the call with {@code error}, dropping what is queued. Called holding this. */
    private void closeWith(RuntimeException error) {
        closed = true;
        dropQueued();
        try {
            stream.onError(ErrorCatalogue.toStatusException(error));
        } catch (RuntimeException alreadyClosed) {
            LOG.debug("pipeline stream already closed", alreadyClosed);
        }
    }

    void finished(PipelinedCall<?, ResponseT> call) {
        inFlight.remove(call.callId(), call);
        call.uncount();
        latencyNanos.accept(call.method(), System.nanoTime() - call.startNanos());
        if (inboundPaused.get() && answersFlow()) {
            resumeReading(); // reading may have waited for fewer calls in flight
        }
    }

    @Override
    public void onError(Throwable error) {
        end();
    }

    @Override
    public void onCompleted() {
        end();
        synchronized (this) {
            if (!closed) {
                closed = true;
                // The client half-closed: it still reads, so it gets the answers that wait (within the byte limit).
                int answers = queued.size();
                while (!queued.isEmpty()) {
                    write(queued.pollFirst());
                }
                queuedBytes = 0;
                forget(answers);
                try {
                    stream.onCompleted();
                } catch (RuntimeException alreadyClosed) {
                    LOG.debug("pipeline stream already closed", alreadyClosed);
                }
            }
        }
    }

    /** Ends the stream with UNAVAILABLE, so the client moves on while the server shuts down. */
    public void fail(UnavailableException error) {
        end();
        synchronized (this) {
            if (!closed) {
                closeWith(error);
            }
        }
    }

    /** The client went away or the stream ends: its calls are abandoned, as cancelled unary calls are. */
    private void end() {
        ended = true;
        unpause();
        onEnd.accept(this);
        if (stream.isCancelled()) {
            synchronized (this) {
                dropQueued(); // no one will take them
            }
        }
        List<PipelinedCall<?, ResponseT>> calls = new ArrayList<>(inFlight.values());
        for (PipelinedCall<?, ResponseT> call : calls) {
            call.cancel();
        }
    }
}
