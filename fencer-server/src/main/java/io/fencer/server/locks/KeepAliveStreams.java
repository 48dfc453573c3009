package io.fencer.server.locks;

import io.fencer.api.errors.WireErrors;
import io.fencer.api.v1.KeepAliveRequest;
import io.fencer.api.v1.KeepAliveResponse;
import io.fencer.api.v1.RenewRequest;
import io.fencer.api.v1.RenewResponse;
import io.fencer.core.LimitExceededException;
import io.fencer.core.SessionUnauthenticatedException;
import io.fencer.core.UnavailableException;
import io.fencer.lock.SecretHash;
import io.fencer.server.auth.Authorizer;
import io.fencer.server.auth.Permission;
import io.fencer.server.raft.Proposer;
import io.fencer.server.raft.RaftNode;
import io.fencer.server.rpc.ErrorCatalogue;
import io.fencer.server.rpc.PacedRequests;
import io.fencer.server.rpc.Replies;
import io.fencer.server.rpc.StreamFlow;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import java.util.ArrayDeque;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The lease renewals of {@code fencer.v1.Locks}: the KeepAlive streams and the unary Renew, which one KeepAlive
 * message of its own serves. They live apart from {@link LocksService}'s other calls because they alone never
 * propose (a keepalive renews the lease in the {@link SessionKeeper}'s memory, not in the log) and they alone hold
 * answers for the leader lease, with their own bounds ({@link #HELD_KEEPALIVES_MAX},
 * {@link #HELD_KEEPALIVE_MILLIS_MAX}) and flow-control counters.
 */
final class KeepAliveStreams {
    private static final Logger LOG = LoggerFactory.getLogger(KeepAliveStreams.class);
    /** The most keepalives one stream may have held while this peer's leader lease lapses. */
    static final int HELD_KEEPALIVES_MAX = 65_536;
    /**
     * The longest a keepalive is held for the leader lease before its stream ends with UNAVAILABLE: a leader whose
     * heartbeats take this long is no use to the client, which then looks for the leader again.
     */
    static final long HELD_KEEPALIVE_MILLIS_MAX = 2_000;

    private final RaftNode raft;
    private final SessionKeeper keeper;
    /** Checks each message's permission: a reloaded ACL applies to open streams. */
    private final Authorizer authorizer;
    /** Refuses a message unless this peer serves: the same check as every other call of the service. */
    private final Runnable checkServing;
    /** The proposer's durable mark, for every renewal: it confirms releases answered before they were durable. */
    private final Supplier<Proposer.DurableMark> durable;
    private final Set<KeepAliveStream> streams = ConcurrentHashMap.newKeySet();
    private final StreamFlow flow = new StreamFlow("locks.keepAlive");

    KeepAliveStreams(RaftNode raft, SessionKeeper keeper, Authorizer authorizer, Runnable checkServing,
            Supplier<Proposer.DurableMark> durable) {
        this.raft = raft;
        this.keeper = keeper;
        this.authorizer = authorizer;
        this.checkServing = checkServing;
        this.durable = durable;
    }

    /** Opens one client's KeepAlive stream answering on {@code out}; returns where its requests go. */
    StreamObserver<KeepAliveRequest> open(StreamObserver<KeepAliveResponse> out) {
        ServerCallStreamObserver<KeepAliveResponse> call = (ServerCallStreamObserver<KeepAliveResponse>) out;
        KeepAliveStream stream = new KeepAliveStream(call);
        streams.add(stream);
        call.setOnCancelHandler(() -> streams.remove(stream));
        // Each request is answered at once: read the next only when its answer can flow.
        return PacedRequests.pace(call, stream, flow);
    }

    /**
     * Renews one session once: the unary form of one KeepAlive message. The request is served by a KeepAlive stream
     * of its own, so every check and rule of a keepalive (leadership, the leader's serving state, the ACL, the secret,
     * the lease renewal) is the stream's very code; the stream's one answer ends the call, and a refused secret, which
     * a stream answers in its message, becomes this call's error.
     */
    void renew(RenewRequest request, StreamObserver<RenewResponse> out) {
        ServerCallStreamObserver<RenewResponse> call = (ServerCallStreamObserver<RenewResponse>) out;
        try {
            long sessionId = RequestChecks.sessionId("session_id", request.getSessionId());
            new KeepAliveStream(new RenewCall(call)).onNext(KeepAliveRequest.newBuilder().setSessionId(sessionId)
                    .setSessionSecret(request.getSessionSecret()).build());
        } catch (RuntimeException e) {
            Replies.send(call, null, e);
        }
    }

    /** Returns the flow-control counters of the KeepAlive streams. */
    StreamFlow flow() {
        return flow;
    }

    /** Ends every open KeepAlive stream with {@code error}, so clients move on while the server shuts down. */
    void shutdown(UnavailableException error) {
        for (KeepAliveStream stream : streams) {
            stream.fail(error);
        }
    }

    /**
     * One client's keepalive stream: each request is answered in order, at once while this peer holds the leader
     * lease, else held until it holds it again (at most {@link #HELD_KEEPALIVES_MAX} per stream) or fails the stream
     * with NOT_LEADER once this peer no longer leads in the term the request arrived in. A keepalive renews from its
     * arrival. Synchronized because {@link #shutdown(UnavailableException)} and the keeper's lease retries use it from other threads.
     */
    private final class KeepAliveStream implements StreamObserver<KeepAliveRequest> {
        private final ServerCallStreamObserver<KeepAliveResponse> call;
        private final ArrayDeque<HeldKeepAlive> held = new ArrayDeque<>(); // guarded by this
        private boolean retryRegistered; // guarded by this
        private boolean closed; // guarded by this

        KeepAliveStream(ServerCallStreamObserver<KeepAliveResponse> call) {
            this.call = call;
        }

        @Override
        public synchronized void onNext(KeepAliveRequest request) {
            long arrivalNanos = keeper.now(); // first: the renewal counts from here, never from a later moment
            if (closed || call.isCancelled()) {
                return;
            }
            try {
                checkServing.run();
                long term = keeper.servingTerm();
                if (term < 0) {
                    throw new UnavailableException("this peer was just elected leader and is not serving yet");
                }
                authorizer.checkSomewhere(Permission.LOCK); // each message: a reloaded ACL applies to open streams
                if (held.size() >= HELD_KEEPALIVES_MAX) {
                    throw new LimitExceededException("heldKeepAlivesMax", HELD_KEEPALIVES_MAX, "a keepalive stream "
                            + "has " + held.size() + " keepalives held for the leader lease, heldKeepAlivesMax is "
                            + HELD_KEEPALIVES_MAX);
                }
                held.add(new HeldKeepAlive(request, arrivalNanos, term));
                answerHeld();
            } catch (RuntimeException e) {
                fail(e);
            }
        }

        /** Answers the held keepalives the lease now confirms, in order; registers a retry for the rest. */
        private synchronized void answerHeld() {
            while (!held.isEmpty() && !closed) {
                HeldKeepAlive next = held.peek();
                SessionKeeper.Confirmation confirmation = keeper.confirm(next.term());
                if (confirmation == SessionKeeper.Confirmation.LOST) {
                    fail(raft.notLeader());
                    return;
                }
                if (confirmation == SessionKeeper.Confirmation.PENDING) {
                    if (!heldTooLong(next)) {
                        registerRetry();
                    }
                    return;
                }
                KeepAliveResponse answer = keepAliveAnswer(next.request(), next.arrivalNanos());
                if (answer == null) {
                    // The session's lease bound is being cleared in the log: answer once it is (or time out).
                    if (heldTooLong(next)) {
                        return;
                    }
                    registerRetry();
                    return;
                }
                held.poll();
                call.onNext(answer);
            }
        }

        /** Fails the stream when {@code next} has been held longer than {@link #HELD_KEEPALIVE_MILLIS_MAX}. */
        private boolean heldTooLong(HeldKeepAlive next) {
            long heldMillis = TimeUnit.NANOSECONDS.toMillis(keeper.now() - next.arrivalNanos());
            if (heldMillis <= HELD_KEEPALIVE_MILLIS_MAX) {
                return false;
            }
            fail(new UnavailableException("this leader could not confirm its leader lease, or record the session's"
                    + " renewal, within " + HELD_KEEPALIVE_MILLIS_MAX + " ms (heldKeepAliveMillisMax): a keepalive"
                    + " held " + heldMillis + " ms is not acknowledged"));
            return true;
        }

        private void registerRetry() {
            if (!retryRegistered) {
                retryRegistered = true;
                keeper.retryWhenLeaseMayHold(this::retryHeld);
            }
        }

        private synchronized void retryHeld() {
            retryRegistered = false;
            try {
                answerHeld();
            } catch (RuntimeException e) {
                fail(e);
            }
        }

        synchronized void fail(RuntimeException error) {
            if (closed) {
                return;
            }
            closed = true;
            held.clear();
            streams.remove(this);
            try {
                call.onError(ErrorCatalogue.toStatusException(error));
            } catch (RuntimeException alreadyClosed) {
                LOG.debug("keepalive stream already closed", alreadyClosed);
            }
        }

        @Override
        public synchronized void onError(Throwable error) {
            closed = true;
            held.clear();
            streams.remove(this);
        }

        @Override
        public synchronized void onCompleted() {
            streams.remove(this);
            if (!closed) {
                closed = true;
                try {
                    call.onCompleted();
                } catch (RuntimeException alreadyClosed) {
                    LOG.debug("keepalive stream already closed", alreadyClosed);
                }
            }
        }
    }

    /**
     * Answers one keepalive: renewed (naming the session's revoked grants, if any), expired (the session is not open),
     * or refused for a missing or wrong secret of an open session, in the answer's {@code error}, so that the stream stays open for the client's other sessions.
     * Returns null when it cannot answer yet: the session's lease bound is being cleared in the log first.
     */
    private KeepAliveResponse keepAliveAnswer(KeepAliveRequest request, long arrivalNanos) {
        long sessionId = request.getSessionId();
        KeepAliveResponse.Builder response = KeepAliveResponse.newBuilder().setSessionId(sessionId);
        if (sessionId <= 0 || !keeper.keeps(sessionId)) {
            return response.setExpired(true).build();
        }
        try {
            SecretHash presented = RequestChecks.sessionSecret(sessionId, request.getSessionSecret());
            SessionKeeper.Renewal renewal = keeper.keepAlive(sessionId, presented, arrivalNanos);
            if (renewal == SessionKeeper.Renewal.CLEARING_BOUND) {
                return null;
            }
            if (renewal == SessionKeeper.Renewal.RENEWED) {
                response.setTtlMillis(keeper.ttlMillis(sessionId)).addAllRevoked(keeper.revokedGrants(sessionId))
                        .setDurable(Protos.durableMark(durable.get()));
            } else {
                response.setExpired(true);
            }
        } catch (SessionUnauthenticatedException e) {
            response.setError(Replies.callError(e));
        }
        return response.build();
    }

    /** A keepalive waiting for the leader lease: its request, its arrival on the keeper's ticker, and its term. */
    private record HeldKeepAlive(KeepAliveRequest request, long arrivalNanos, long term) {}

    /** A Renew call as the KeepAlive stream that serves it sees it: the stream's first answer or error ends it. */
    private static final class RenewCall extends ServerCallStreamObserver<KeepAliveResponse> {
        private final ServerCallStreamObserver<RenewResponse> call;
        private final AtomicBoolean answered = new AtomicBoolean();

        RenewCall(ServerCallStreamObserver<RenewResponse> call) {
            this.call = call;
        }

        @Override
        public void onNext(KeepAliveResponse answer) {
            if (!answered.compareAndSet(false, true)) {
                return;
            }
            if (answer.hasError()) {
                Replies.send(call, null, WireErrors.toException(WireErrors.toStatusException(answer.getError())));
                return;
            }
            Replies.send(call, RenewResponse.newBuilder().setSessionId(answer.getSessionId())
                    .setTtlMillis(answer.getTtlMillis()).setExpired(answer.getExpired())
                    .addAllRevoked(answer.getRevokedList()).build(), null);
        }

        @Override
        public void onError(Throwable error) {
            if (answered.compareAndSet(false, true)) {
                Replies.send(call, null, error);
            }
        }

        @Override
        public void onCompleted() {
            // the one answer has completed the call
        }

        @Override
        public boolean isCancelled() {
            return call.isCancelled();
        }

        @Override
        public void setOnCancelHandler(Runnable onCancelHandler) {
            call.setOnCancelHandler(onCancelHandler);
        }

        @Override
        public void setCompression(String compression) {
            call.setCompression(compression);
        }

        @Override
        public boolean isReady() {
            return call.isReady();
        }

        @Override
        public void setOnReadyHandler(Runnable onReadyHandler) {
            // one answer: nothing to pace
        }

        @Override
        public void disableAutoInboundFlowControl() {
            // the request arrived with the unary call
        }

        @Override
        public void request(int count) {
            // the request arrived with the unary call
        }

        @Override
        public void setMessageCompression(boolean enable) {
            call.setMessageCompression(enable);
        }
    }
}
