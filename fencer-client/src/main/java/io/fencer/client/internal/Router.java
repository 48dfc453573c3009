package io.fencer.client.internal;

import static java.util.concurrent.TimeUnit.MILLISECONDS;
import static java.util.concurrent.TimeUnit.NANOSECONDS;

import io.fencer.api.errors.WireErrors;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.ListPeersRequest;
import io.fencer.api.v1.ListPeersResponse;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.PeersGrpc;
import io.fencer.api.v1.Reason;
import io.fencer.core.UnavailableException;
import io.grpc.Channel;
import io.grpc.ConnectivityState;
import io.grpc.ManagedChannel;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The client's way to the leader: one lazily created channel per endpoint (plaintext or TLS, as its
 * {@link ClientTransport} says), a current endpoint that
 * follows the leader, and the retry loop every call goes through.
 *
 * <p>A call that fails UNAVAILABLE with reason NOT_LEADER moves to the leader it names (learning its address if
 * new), or to the next endpoint when it names none; any other UNAVAILABLE (refused, reset, no leader yet) and
 * DEADLINE_EXCEEDED move to the next endpoint. Retries pause with exponential backoff and jitter, and stop when
 * the call's budget is spent, with an {@link UnavailableException} naming the endpoints tried and the last error.
 * Once a peer has answered that it is not the leader, the budget lasts at least {@link #ELECTION_WAIT_NANOS} from
 * that answer, so that a call made during an election outlives it.
 * Every call retried here must be idempotent: callers that create state carry a request id fixed per logical call.
 *
 * <p>Budgets are measured with {@link System#nanoTime()}, not the client's injected ticker: gRPC deadlines run
 * on real time, and a frozen test ticker must not make a call retry forever. Thread-safe.
 */
final class Router implements PeerDirectory.Members, AutoCloseable {
    /** The shortest time one attempt may take before the call moves on, unless the whole budget is shorter. */
    private static final long ATTEMPT_NANOS_MIN = MILLISECONDS.toNanos(1_000);
    private static final long SHUTDOWN_WAIT_MILLIS = 1_000;
    /**
     * How long a call keeps trying, at the least, once a peer has answered that it is not the leader (or that the
     * group cannot serve yet): the group is electing. An election takes an election timeout (400–800 ms) and a vote,
     * a split vote another timeout, and the new leader must commit once before it serves; three seconds cover two
     * election timeouts and those steps with room for a loaded machine. A call whose own budget is shorter (a short
     * {@code callTimeout}, or one spent on a peer that stopped answering) gets this much from the first such answer.
     */
    static final long ELECTION_WAIT_NANOS = MILLISECONDS.toNanos(3_000);
    private static final System.Logger LOG = System.getLogger(Router.class.getName());

    /** The blocking part of one attempt: unary calls through {@code calls}, which carry the attempt's deadline. */
    @FunctionalInterface
    interface Attempt<T> {
        T run(AttemptCalls calls);
    }

    /**
     * One attempt's way to its endpoint: unary calls on the endpoint's channel, each failing DEADLINE_EXCEEDED
     * when it has no answer within {@code timeoutNanos} (see {@link UnaryCalls} for why the client, not gRPC,
     * enforces it).
     */
    record AttemptCalls(Channel channel, Pipeline<?, ?> pipeline, long timeoutNanos, Abort abort) {
        AttemptCalls(Channel channel, Pipeline<?, ?> pipeline, long timeoutNanos) {
            this(channel, pipeline, timeoutNanos, null);
        }

        /**
         * Calls {@code method} and waits for its answer; fails as a gRPC blocking stub does. Acquire and Release
         * travel on the endpoint's {@link Pipeline} stream when it has one.
         */
        <RequestT, ResponseT> ResponseT call(MethodDescriptor<RequestT, ResponseT> method, RequestT request) {
            if (pipeline != null && pipeline.carries(method)) {
                return pipeline.call(method, request, timeoutNanos, abort);
            }
            return UnaryCalls.call(channel, method, request, timeoutNanos, abort);
        }

        /** Returns the same way with another deadline: an Acquire's is its wait plus a margin. */
        AttemptCalls withTimeoutNanos(long nanos) {
            return new AttemptCalls(channel, pipeline, nanos, abort);
        }

        /** Returns the same way, its calls given up (cancelled at the peer) as soon as {@code abort} says why. */
        AttemptCalls abortedBy(Abort abort) {
            return new AttemptCalls(channel, pipeline, timeoutNanos, abort);
        }
    }

    /**
     * What ends a long wait for an answer before its deadline, from outside the call: a waiting Acquire's session
     * that ended meanwhile (a frozen or cut-off peer keeps its connection open and says nothing, so the deadline
     * alone, the wait plus a margin, could hold the caller for an hour).
     */
    interface Abort {
        /** Returns the failure the call is to end with, or null to keep waiting. */
        RuntimeException why();

        /**
         * Returns how long the waiting call may sleep before it asks {@link #why} again (at least a millisecond): not
         * a fixed period, since every waiter wakes to ask, and 64 callers queued on one lock asking twice a second
         * cost their hand-offs measurably.
         */
        long askAgainInNanos();
    }

    /**
     * Whether Acquire and Release travel on a {@link Pipeline} stream or as unary calls, unless the builder says
     * ({@link io.fencer.client.FencerClient.Builder#pipelining}): on, unless the system property
     * {@code fencer.client.pipeline=false} turns it off for the whole JVM.
     */
    static final boolean PIPELINING_DEFAULT = !"false".equals(System.getProperty("fencer.client.pipeline"));

    /** One endpoint's channel, its stub for streams and its pipeline (null when off), made once. */
    private record Peer(ManagedChannel channel, LocksGrpc.LocksStub async, Pipeline<?, ?> pipeline) {}

    private final CopyOnWriteArrayList<String> endpoints;
    private final Map<String, Peer> peers = new ConcurrentHashMap<>();
    /** Endpoints whose attempt timed out lately: redirects to them are ignored and moving on skips them. */
    private final SuspectedEndpoints suspects;
    private final long callTimeoutNanos;
    /** How long a call retries while no endpoint has ever answered and none accepts a connection. */
    private final long unreachableTimeoutNanos;
    private final long attemptTimeoutNanos;
    private final RetryBudget.Sleeper sleeper;
    private final ClientTransport transport;
    private final ClientEventLoops eventLoops = new ClientEventLoops("fencer-client");
    /** Whether each endpoint gets a {@link Pipeline} stream for Acquire and Release. */
    private final boolean pipelining;
    private volatile String current;
    private volatile boolean closed;
    /** Whether a server has ever answered a call (with a result or an error): then refusals are transient. */
    private volatile boolean answered;
    /** The endpoints the client was configured with: membership refreshes never drop them. */
    private final List<String> configured;
    /**
     * Told when a NOT_LEADER answer names a leader this router did not know, or a call moves on without a leader
     * named (a {@link PeerDirectory} refreshes).
     */
    private volatile Runnable unknownLeaderListener = () -> { };
    /** The most endpoints a router knows: configured ones, plus those learned from answers and peer lists. */
    static final int ENDPOINTS_MAX = 64;

    Router(List<String> endpoints, long callTimeoutNanos, long unreachableTimeoutNanos, ClientTransport transport,
            boolean pipelining) {
        this(endpoints, callTimeoutNanos, unreachableTimeoutNanos, RetryBudget.SYSTEM, transport, pipelining);
    }

    /** Makes a plaintext router whose retries wait with {@code sleeper}: tests make it oversleep. */
    Router(List<String> endpoints, long callTimeoutNanos, RetryBudget.Sleeper sleeper) {
        this(endpoints, callTimeoutNanos, callTimeoutNanos, sleeper, ClientTransport.plaintext(),
                PIPELINING_DEFAULT);
    }

    private Router(List<String> endpoints, long callTimeoutNanos, long unreachableTimeoutNanos,
            RetryBudget.Sleeper sleeper, ClientTransport transport, boolean pipelining) {
        if (endpoints.isEmpty()) {
            throw new IllegalArgumentException("at least one endpoint (host:port) is required");
        }
        if (callTimeoutNanos <= 0) {
            throw new IllegalArgumentException("call timeout must be positive: " + callTimeoutNanos + " ns");
        }
        List<String> checked = new ArrayList<>();
        for (String endpoint : endpoints) {
            String valid = checkEndpoint(endpoint);
            if (!checked.contains(valid)) {
                checked.add(valid);
            }
        }
        this.endpoints = new CopyOnWriteArrayList<>(checked);
        this.configured = List.copyOf(checked);
        this.callTimeoutNanos = callTimeoutNanos;
        this.unreachableTimeoutNanos = unreachableTimeoutNanos;
        // An attempt gets a third of the budget, so a hung peer (paused, partitioned) leaves time for the others.
        this.attemptTimeoutNanos = Math.min(callTimeoutNanos, Math.max(callTimeoutNanos / 3, ATTEMPT_NANOS_MIN));
        this.suspects = new SuspectedEndpoints(attemptTimeoutNanos);
        this.sleeper = sleeper;
        this.transport = transport;
        this.pipelining = pipelining;
        this.current = checked.get(0);
    }

    /**
     * Returns {@code endpoint} when it is {@code host:port} ({@code [v6-address]:port} for IPv6) with a port in
     * [1, 65535].
     *
     * @throws IllegalArgumentException naming the endpoint otherwise
     */
    static String checkEndpoint(String endpoint) {
        if (endpoint == null) {
            throw new IllegalArgumentException("endpoint must not be null");
        }
        int colon = endpoint.lastIndexOf(':');
        String why = null;
        if (colon <= 0 || colon == endpoint.length() - 1) {
            why = "expected host:port";
        } else if (!validHost(endpoint.substring(0, colon))) {
            why = "the host '" + endpoint.substring(0, colon) + "' is not a host name or address";
        } else if (!validPort(endpoint.substring(colon + 1))) {
            why = "the port '" + endpoint.substring(colon + 1) + "' is not a number in [1, 65535]";
        }
        if (why != null) {
            throw new IllegalArgumentException("bad endpoint '" + endpoint + "': " + why);
        }
        return endpoint;
    }

    private static boolean validHost(String host) {
        if (host.startsWith("[") && host.endsWith("]")) {
            return host.length() > 2 && host.substring(1, host.length() - 1).chars()
                    .allMatch(c -> c == ':' || c == '.' || Character.digit(c, 16) >= 0);
        }
        return !host.isEmpty() && host.chars().allMatch(c -> Character.isLetterOrDigit(c) || c == '.' || c == '-'
                || c == '_');
    }

    private static boolean validPort(String port) {
        if (port.isEmpty() || port.length() > 5 || !port.chars().allMatch(c -> c >= '0' && c <= '9')) {
            return false;
        }
        int value = Integer.parseInt(port);
        return value >= 1 && value <= 65_535;
    }

    @Override
    public long callTimeoutNanos() {
        return callTimeoutNanos;
    }

    /** Returns how long one attempt may take before the call moves to another endpoint. */
    long attemptTimeoutNanos() {
        return attemptTimeoutNanos;
    }

    /** Returns the endpoint calls go to now: the leader, as far as this client knows. */
    String current() {
        return current;
    }

    /** Returns the known endpoints, the configured ones first, then those learned from answers and peer lists. */
    @Override
    public List<String> endpoints() {
        return List.copyOf(endpoints);
    }

    /**
     * Returns the known endpoint after {@code endpoint} (the first when it is no longer known), leaving the endpoint
     * calls go to where it is: for a stream that any peer serves, whose peer refused it.
     */
    String after(String endpoint) {
        List<String> known = endpoints();
        return known.get((known.indexOf(endpoint) + 1) % known.size());
    }

    @Override
    public void onUnknownLeader(Runnable listener) {
        unknownLeaderListener = listener;
    }

    @Override
    public ListPeersResponse listPeers(long budgetNanos) {
        return call("List peers", budgetNanos, calls -> calls.call(PeersGrpc.getListMethod(),
                ListPeersRequest.getDefaultInstance()));
    }

    /**
     * Takes the client addresses of the group's peers as the group lists them: new ones are added (up to
     * {@link #ENDPOINTS_MAX} in all), and learned ones no longer listed are dropped; the configured endpoints stay
     * whatever the list says, so that a client can always start over from them.
     */
    @Override
    public synchronized void learnPeers(List<String> addresses) {
        PeerDirectory.follow(endpoints, configured, current, addresses, ENDPOINTS_MAX);
    }

    /** Returns the asynchronous stub of {@code endpoint}, for streams (opened rarely: after a failure). */
    LocksGrpc.LocksStub asyncStub(String endpoint) {
        Peer peer = peer(endpoint);
        resetBackoffIfFailing(peer);
        return peer.async();
    }

    /**
     * Sends {@code request} on the current endpoint's {@link Pipeline} without waiting ({@link Pipeline#send});
     * returns false, having sent nothing, when that endpoint has no pipeline for {@code method} or the client is
     * closed.
     */
    boolean sendWithoutWaiting(MethodDescriptor<?, ?> method, Object request, Pipeline.Answered done) {
        if (closed) {
            return false;
        }
        Pipeline<?, ?> pipeline;
        try {
            pipeline = peer(current).pipeline();
        } catch (IllegalStateException closedMeanwhile) {
            return false;
        }
        return pipeline != null && pipeline.carries(method) && pipeline.send(method, request, done);
    }

    /** Runs {@code attempt} on the leader, retrying elsewhere within the client's call timeout. */
    <T> T call(String operation, Attempt<T> attempt) {
        return call(operation, callTimeoutNanos, true, attempt);
    }

    /** Runs {@code attempt}, a read that changes nothing, as {@link #call(String, Attempt)} does. */
    <T> T read(String operation, Attempt<T> attempt) {
        return call(operation, callTimeoutNanos, false, attempt);
    }

    /** Runs {@code attempt}, which may change state, retrying for {@code budgetNanos}. */
    <T> T call(String operation, long budgetNanos, Attempt<T> attempt) {
        return call(operation, budgetNanos, true, attempt);
    }

    /**
     * Runs {@code attempt} on the leader, retrying on the leader or the next endpoint until {@code budgetNanos}
     * has passed; or, while no server has ever answered this router, until every endpoint has refused the
     * connection (or has an unknown host) for the unreachable timeout.
     *
     * @throws UnavailableException when no endpoint answered within the budget; a call that {@code changesState}
     *     may have taken effect
     * @throws io.fencer.core.FencerException of the server's reason when the server refused the call
     * @throws IllegalStateException when the client is closed
     */
    private <T> T call(String operation, long budgetNanos, boolean changesState, Attempt<T> attempt) {
        RetryBudget budget = new RetryBudget(budgetNanos, sleeper, changesState);
        String endpoint = current;
        Set<String> tried = null; // made on the first failure: the common call succeeds at once
        boolean pausedLast = true;
        boolean electing = false;
        while (true) {
            Peer peer = peer(endpoint);
            try {
                T result = attempt.run(new AttemptCalls(peer.channel(), peer.pipeline(),
                        Math.min(budget.remainingNanos(), attemptTimeoutNanos)));
                answered = true;
                return result;
            } catch (StatusRuntimeException failure) {
                answered |= !Unreachable.neverSent(failure);
                if (!isRetryable(failure) || closed) {
                    throw WireErrors.toException(failure);
                }
                budget.failed(failure);
                if (Thread.currentThread().isInterrupted()) {
                    throw budget.interrupted(operation);
                }
                if (!electing && answeredByGroup(failure)) {
                    electing = true; // from now on the call waits out an election at the least
                    budget.extendTo(System.nanoTime() + ELECTION_WAIT_NANOS);
                }
                tried = tried == null ? new LinkedHashSet<>() : tried;
                tried.add(endpoint);
                if (!answered && tried.containsAll(endpoints) && budget.unreachableFor(unreachableTimeoutNanos)) {
                    throw unreachable(operation, tried, budget);
                }
                String next = onFailure(endpoint, failure);
                long backoffNanos = budget.nextBackoffNanos();
                // Follow a named leader at once, but not twice in a row: two peers naming each other must not spin.
                long pauseNanos = !next.equals(endpoint) && pausedLast && leaderAddress(failure).isPresent()
                        ? 0 : backoffNanos;
                pausedLast = pauseNanos > 0;
                if (!budget.pauseBeforeRetry(operation, pauseNanos)) {
                    throw budget.reachedNoServer() ? unreachable(operation, tried, budget)
                            : unavailable(operation, tried, budget);
                }
                endpoint = next;
                resetBackoffIfFailing(peer(endpoint));
            }
        }
    }

    /**
     * Returns true when a peer of the group answered that it cannot serve the call now: NOT_LEADER (with or without
     * a leader's address), or UNAVAILABLE with Fencer's error detail (a leader not ready yet). The group is then
     * electing or about to serve, unlike a peer that refuses connections or does not answer at all.
     */
    static boolean answeredByGroup(Throwable failure) {
        if (Status.fromThrowable(failure).getCode() != Status.Code.UNAVAILABLE) {
            return false;
        }
        Optional<ErrorDetail> detail = WireErrors.detail(failure);
        return detail.isPresent() && (detail.get().getReason() == Reason.REASON_NOT_LEADER
                || detail.get().getReason() == Reason.REASON_UNAVAILABLE);
    }

    /**
     * Returns true for failures that say nothing was done, or that the outcome is unknown: retry elsewhere.
     * CANCELLED counts when the caller did not cancel (a peer shutting down cancels its calls); an interrupted
     * caller is checked before.
     */
    static boolean isRetryable(Throwable failure) {
        Status.Code code = Status.fromThrowable(failure).getCode();
        return code == Status.Code.UNAVAILABLE || code == Status.Code.DEADLINE_EXCEEDED
                || code == Status.Code.CANCELLED;
    }

    /**
     * Moves the current endpoint away from {@code failed} after a retryable failure and returns the endpoint to
     * use next: the leader named by a NOT_LEADER answer, or else the endpoint after {@code failed}.
     */
    String onFailure(String failed, Throwable failure) {
        if (Status.fromThrowable(failure).getCode() == Status.Code.DEADLINE_EXCEEDED) {
            suspect(failed);
        }
        Optional<String> leader = leaderAddress(failure);
        // During an election a follower may still name the old leader that just timed out: do not go back to it.
        if (leader.isPresent() && !suspects.isSuspected(leader.get())) {
            String address = leader.get();
            if (endpoints.size() < ENDPOINTS_MAX && endpoints.addIfAbsent(address)) {
                LOG.log(System.Logger.Level.DEBUG, "learned leader endpoint {0} from {1}", address, failed);
                unknownLeaderListener.run();
            }
            current = address;
            return address;
        }
        // No leader named: an election, or a peer that left the group. The group's list may know peers this
        // router does not (a PeerDirectory refreshes, at most once a second).
        unknownLeaderListener.run();
        return advanceFrom(failed);
    }

    /**
     * Marks {@code endpoint} as not answering (a paused or partitioned peer keeps its connection and stays
     * silent) for one attempt timeout: meanwhile redirects to it are ignored and advancing skips it.
     */
    void suspect(String endpoint) {
        suspects.suspect(endpoint);
    }

    /**
     * Moves to the first endpoint after {@code failed} that is not suspected (or simply the next one when all
     * are), unless another caller has already moved away from {@code failed}.
     */
    synchronized String advanceFrom(String failed) {
        if (current.equals(failed)) {
            current = suspects.after(endpoints, failed);
        }
        return current;
    }

    private static Optional<String> leaderAddress(Throwable failure) {
        Optional<ErrorDetail> detail = WireErrors.detail(failure);
        if (detail.isEmpty() || detail.get().getReason() != Reason.REASON_NOT_LEADER
                || detail.get().getLeaderAddress().isEmpty()) {
            return Optional.empty();
        }
        String address = detail.get().getLeaderAddress();
        try {
            return Optional.of(checkEndpoint(address));
        } catch (IllegalArgumentException e) {
            LOG.log(System.Logger.Level.WARNING, "ignoring the leader address a peer named: {0}", e.getMessage());
            return Optional.empty();
        }
    }

    private Peer peer(String endpoint) {
        Peer peer = peers.get(endpoint);
        if (peer != null && !closed) {
            return peer;
        }
        synchronized (this) {
            if (closed) {
                throw new IllegalStateException("the FencerClient is closed");
            }
            return peers.computeIfAbsent(endpoint, this::connect);
        }
    }

    private Peer connect(String endpoint) {
        ManagedChannel channel = eventLoops.use(transport.channelBuilder(endpoint))
                // Fencer retries by itself, idempotently; gRPC's transparent retry buffers every call for nothing
                .disableRetry()
                .build();
        return new Peer(channel, LocksGrpc.newStub(channel), pipelining ? Pipeline.locks(channel) : null);
    }

    /** Retries must not wait for gRPC's own reconnect backoff (up to 2 minutes): a restarted peer is used at once. */
    private static void resetBackoffIfFailing(Peer peer) {
        if (peer.channel().getState(false) == ConnectivityState.TRANSIENT_FAILURE) {
            peer.channel().resetConnectBackoff();
        }
    }

    private UnavailableException unavailable(String operation, Set<String> tried, RetryBudget budget) {
        return new UnavailableException(operation + " failed: no leader answered within "
                + NANOSECONDS.toMillis(budget.budgetNanos()) + " ms; endpoints tried: "
                + String.join(", ", tried)
                + " (known: " + String.join(", ", endpoints) + "); last error: " + budget.lastErrors()
                + budget.outcome(), budget.lastFailure());
    }

    /**
     * The failure of a call that reached no server, whether the unreachable timeout or the call's own ended it: say
     * where it tried and why, and that nothing was sent.
     */
    private UnavailableException unreachable(String operation, Set<String> tried, RetryBudget budget) {
        return new UnavailableException(operation + " failed: cannot connect to " + String.join(", ", tried)
                + " (" + budget.whyUnreachable() + ", for " + NANOSECONDS.toMillis(budget.elapsedNanos()) + " ms)"
                + budget.outcome(), budget.lastFailure());
    }

    /** Returns a one-line account of a failed call: status, description, and the transport's own cause. */
    static String describe(Throwable failure) {
        Status status = Status.fromThrowable(failure);
        StringBuilder out = new StringBuilder(status.getCode().toString());
        WireErrors.detail(failure).ifPresentOrElse(
                detail -> out.append(" ").append(detail.getReason()).append(": ").append(detail.getMessage()),
                () -> {
                    if (status.getDescription() != null) {
                        out.append(": ").append(status.getDescription());
                    }
                });
        if (status.getCause() != null && status.getCause().getMessage() != null) {
            out.append(" (").append(status.getCause().getMessage()).append(")");
        }
        return out.toString();
    }

    /** Shuts every channel down, waiting briefly for calls in flight. Idempotent. */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        for (Peer peer : peers.values()) {
            if (peer.pipeline() != null) {
                peer.pipeline().close(); // an open stream would hold the channel's graceful shutdown up
            }
            peer.channel().shutdown();
        }
        long deadline = System.nanoTime() + MILLISECONDS.toNanos(SHUTDOWN_WAIT_MILLIS);
        for (Peer peer : peers.values()) {
            try {
                if (!peer.channel().awaitTermination(Math.max(0, deadline - System.nanoTime()), NANOSECONDS)) {
                    peer.channel().shutdownNow();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                peer.channel().shutdownNow();
            }
        }
        eventLoops.close();
    }
}
