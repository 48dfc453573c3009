package io.fencer.client.internal;

import static java.util.concurrent.TimeUnit.MILLISECONDS;
import static java.util.concurrent.TimeUnit.NANOSECONDS;

import io.fencer.api.errors.WireErrors;
import io.fencer.api.v1.GetRequest;
import io.fencer.api.v1.GetResponse;
import io.fencer.api.v1.ListPeersRequest;
import io.fencer.api.v1.ListPeersResponse;
import io.fencer.api.v1.PeersGrpc;
import io.fencer.api.v1.StoreGrpc;
import io.fencer.api.v1.WriteRequest;
import io.fencer.api.v1.WriteResponse;
import io.fencer.core.UnavailableException;
import io.grpc.ConnectivityState;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;

/**
 * The store client's way to its store: one endpoint (a single node's store), or the peers of a group serving one
 * replicated store, of which the leader answers. One lazily made channel per endpoint, a current endpoint that
 * follows the leader, and the loop every call goes through.
 *
 * <p>Following the leader: an answer NOT_LEADER means the peer took nothing (a peer answers so only from its check
 * before it proposes; a leader that stops leading with the call in its log answers UNAVAILABLE, may or may not have
 * been applied, which only an idempotent call sends again), so every call, idempotent or not, moves to
 * the leader named (or to the next endpoint when none is named) and is sent again at once; once a peer has so
 * answered, the call's budget lasts at least {@link Router#ELECTION_WAIT_NANOS}, so that a call made during an
 * election outlives it. A call retried after a transport failure moves to the next endpoint too. A
 * {@link PeerDirectory} keeps the endpoints in step with the group's membership, as the lock client's router does, so
 * a client configured with the founders still finds the store once every founder was replaced.
 *
 * <p>An idempotent call (reads, fence, create-scope, a write with an idempotency key, unit commit and abort) is
 * retried on UNAVAILABLE, DEADLINE_EXCEEDED and CANCELLED with exponential backoff and jitter until the call
 * timeout is spent; each attempt gets at most a third of the timeout (at least 1 s), so a silent (paused) store
 * does not eat the whole budget in one attempt. Any other call gets one attempt of the whole timeout, and a
 * transport failure is an {@link UnavailableException} saying the call may or may not have taken effect; only an
 * attempt that never reached a store (its connection refused) is made again, at the next endpoint, since nothing was
 * sent.
 * Budgets run on {@link System#nanoTime()}, as gRPC deadlines do. Thread-safe.
 */
final class StoreConnection implements PeerDirectory.Members, AutoCloseable {
    private static final long ATTEMPT_NANOS_MIN = MILLISECONDS.toNanos(1_000);
    private static final long SHUTDOWN_WAIT_MILLIS = 1_000;

    /** The blocking part of one attempt: it runs against {@code calls}, which carry the attempt's deadline. */
    @FunctionalInterface
    interface Attempt<T> {
        T run(StoreCalls calls);
    }

    /**
     * One attempt's way to the store: Write and Get on the {@link Pipeline} stream (when on), other calls on
     * {@link #stub()}, all within the attempt's deadline.
     */
    record StoreCalls(StoreGrpc.StoreBlockingStub unlimited, Pipeline<?, ?> pipeline,
            PeersGrpc.PeersBlockingStub peersUnlimited, long timeoutNanos) {
        /**
         * Returns the blocking stub with the attempt's deadline; made on demand, since pipelined calls, the common
         * ones, need none.
         */
        StoreGrpc.StoreBlockingStub stub() {
            return unlimited.withDeadlineAfter(timeoutNanos, NANOSECONDS);
        }

        /** Returns the group's membership service with the attempt's deadline. */
        PeersGrpc.PeersBlockingStub peers() {
            return peersUnlimited.withDeadlineAfter(timeoutNanos, NANOSECONDS);
        }

        WriteResponse write(WriteRequest request) {
            return pipeline != null && pipeline.carries(StoreGrpc.getWriteMethod())
                    ? pipeline.call(StoreGrpc.getWriteMethod(), request, timeoutNanos) : stub().write(request);
        }

        GetResponse get(GetRequest request) {
            return pipeline != null && pipeline.carries(StoreGrpc.getGetMethod())
                    ? pipeline.call(StoreGrpc.getGetMethod(), request, timeoutNanos) : stub().get(request);
        }
    }

    /** Whether a call may be sent again when its outcome is unknown. */
    enum Retry {
        /** A read: retried, and its failure says that it changed nothing. */
        READ,
        IDEMPOTENT,
        ONCE
    }

    /**
     * The most endpoints a connection knows: the configured ones, leaders learned from NOT_LEADER answers and peers
     * from the group's list.
     */
    static final int ENDPOINTS_MAX = 16;

    private final java.util.List<String> endpoints; // guarded by itself
    /** The endpoints the connection was configured with: membership refreshes never drop them. */
    private final java.util.List<String> configured;
    /** Told when a NOT_LEADER answer names a leader not known, or a call moves on without one named. */
    private volatile Runnable unknownLeaderListener = () -> { };
    private final java.util.Map<String, Endpoint> channels = new java.util.concurrent.ConcurrentHashMap<>();
    private boolean closed; // guarded by channels
    private final ClientTransport transport;
    private final ClientEventLoops eventLoops = new ClientEventLoops("fencer-store-client");
    private final boolean pipelining;
    private volatile String current;
    private final long callTimeoutNanos;
    /** How long a call retries while the store has never answered and refuses connections. */
    private final long unreachableTimeoutNanos;
    private final long attemptTimeoutNanos;
    /** Endpoints whose attempt timed out lately: redirects to them are ignored and moving on skips them. */
    private final SuspectedEndpoints suspects;
    private final RetryBudget.Sleeper sleeper;
    /** Whether the store has ever answered a call (with a result or an error): then refusals are transient. */
    private volatile boolean answered;

    StoreConnection(String endpoint, long callTimeoutNanos, long unreachableTimeoutNanos, ClientTransport transport,
            boolean pipelining) {
        this(endpoint, callTimeoutNanos, unreachableTimeoutNanos, RetryBudget.SYSTEM, transport, pipelining);
    }

    /** One endpoint's channel, blocking stub and pipeline (null when pipelining is off). */
    private record Endpoint(ManagedChannel channel, StoreGrpc.StoreBlockingStub stub, Pipeline<?, ?> pipeline,
            PeersGrpc.PeersBlockingStub peers) {}

    /** Makes a plaintext connection whose retries wait with {@code sleeper}: tests make it oversleep. */
    StoreConnection(String endpoint, long callTimeoutNanos, RetryBudget.Sleeper sleeper) {
        this(endpoint, callTimeoutNanos, callTimeoutNanos, sleeper, ClientTransport.plaintext(),
                Router.PIPELINING_DEFAULT);
    }

    private StoreConnection(String endpoint, long callTimeoutNanos, long unreachableTimeoutNanos,
            RetryBudget.Sleeper sleeper, ClientTransport transport, boolean pipelining) {
        if (callTimeoutNanos <= 0) {
            throw new IllegalArgumentException("call timeout must be positive: " + callTimeoutNanos + " ns");
        }
        this.endpoints = parseEndpoints(endpoint);
        this.configured = java.util.List.copyOf(endpoints);
        this.current = endpoints.get(0);
        this.transport = transport;
        this.pipelining = pipelining;
        this.callTimeoutNanos = callTimeoutNanos;
        this.unreachableTimeoutNanos = unreachableTimeoutNanos;
        this.attemptTimeoutNanos = Math.min(callTimeoutNanos, Math.max(callTimeoutNanos / 3, ATTEMPT_NANOS_MIN));
        this.suspects = new SuspectedEndpoints(attemptTimeoutNanos);
        this.sleeper = sleeper;
    }

    /** Parses {@code host:port[,host:port...]}: the endpoints in order, each checked, duplicates dropped. */
    static java.util.List<String> parseEndpoints(String list) {
        if (list == null) {
            throw new IllegalArgumentException("the store's endpoint (host:port) is required");
        }
        java.util.List<String> parsed = new java.util.ArrayList<>();
        for (String part : list.split(",", -1)) {
            String endpoint = Router.checkEndpoint(part.trim());
            if (!parsed.contains(endpoint)) {
                parsed.add(endpoint);
            }
        }
        if (parsed.size() > ENDPOINTS_MAX) {
            throw new IllegalArgumentException("the store's endpoint list '" + list + "' names " + parsed.size()
                    + " endpoints, more than the " + ENDPOINTS_MAX + " allowed");
        }
        return parsed;
    }

    /** Returns the endpoint calls go to now: the leader, as last learned. */
    String endpoint() {
        return current;
    }

    private Endpoint channelOf(String endpoint) {
        Endpoint made = channels.get(endpoint);
        if (made != null) {
            return made;
        }
        synchronized (channels) { // against close(): no channel is made after it, or missed by it
            if (closed) {
                throw new IllegalStateException("the FencedStore is closed");
            }
            return channels.computeIfAbsent(endpoint, this::connect);
        }
    }

    private Endpoint connect(String address) {
        ManagedChannel channel = eventLoops.use(transport.channelBuilder(address))
                // Fencer retries by itself, idempotently; gRPC's transparent retry buffers every call for nothing
                .disableRetry()
                // the store accepts batches up to 4 MiB and reads return values up to 1 MiB
                .maxInboundMessageSize(8 * 1024 * 1024)
                .build();
        return new Endpoint(channel, StoreGrpc.newBlockingStub(channel), pipelining ? Pipeline.store(channel) : null,
                PeersGrpc.newBlockingStub(channel));
    }

    /**
     * Moves away from {@code failed} and returns where the call goes next: the leader a NOT_LEADER answer names
     * (learned, within {@link #ENDPOINTS_MAX}) unless its attempt timed out lately (during an election a follower may
     * still name a leader that was paused), or else the first endpoint after {@code failed} not so suspected.
     */
    private String moveFrom(String failed, StatusRuntimeException failure) {
        java.util.Optional<io.fencer.api.v1.ErrorDetail> detail = WireErrors.detail(failure);
        String leader = detail.isPresent() && detail.get().getReason() == io.fencer.api.v1.Reason.REASON_NOT_LEADER
                ? detail.get().getLeaderAddress() : "";
        if (failure.getStatus().getCode() == io.grpc.Status.Code.DEADLINE_EXCEEDED) {
            suspects.suspect(failed);
        }
        synchronized (endpoints) {
            if (!leader.isEmpty() && !suspects.isSuspected(leader)) {
                try {
                    String address = Router.checkEndpoint(leader);
                    if (endpoints.contains(address) || endpoints.size() < ENDPOINTS_MAX) {
                        if (!endpoints.contains(address)) {
                            endpoints.add(address);
                            unknownLeaderListener.run();
                        }
                        current = address;
                        return address;
                    }
                } catch (IllegalArgumentException ignored) {
                    // a leader address that is not one: go on to the next endpoint
                }
            }
            // No leader named: an election, or a peer that left the group, whose list may name peers not known here.
            unknownLeaderListener.run();
            if (current.equals(failed)) {
                current = suspects.after(endpoints, failed);
            }
            return current;
        }
    }

    @Override
    public long callTimeoutNanos() {
        return callTimeoutNanos;
    }

    @Override
    public void onUnknownLeader(Runnable listener) {
        unknownLeaderListener = listener;
    }

    @Override
    public ListPeersResponse listPeers(long budgetNanos) {
        return call("List peers", Retry.READ, budgetNanos, null,
                calls -> calls.peers().list(ListPeersRequest.getDefaultInstance()));
    }

    /**
     * Takes the client addresses of the group's peers as the group lists them: new ones are added (up to
     * {@link #ENDPOINTS_MAX} in all), learned ones no longer listed are dropped (but not the current one, which a call
     * may be using), and the configured ones stay whatever the list says, so that the client can start over from them.
     */
    @Override
    public void learnPeers(java.util.List<String> addresses) {
        synchronized (endpoints) {
            PeerDirectory.follow(endpoints, configured, current, addresses, ENDPOINTS_MAX);
        }
    }

    /**
     * Returns the state of the channel to {@code endpoint}, IDLE when none was made: for tests that wait until the
     * client saw a peer's shutdown (a call started on a connection its peer is closing may fail after it was sent).
     */
    ConnectivityState channelState(String endpoint) {
        Endpoint made = channels.get(endpoint);
        return made == null ? ConnectivityState.IDLE : made.channel().getState(false);
    }

    @Override
    public java.util.List<String> endpoints() {
        synchronized (endpoints) {
            return java.util.List.copyOf(endpoints);
        }
    }

    /** Returns true when {@code failure} is a NOT_LEADER answer: the peer took nothing. */
    private static boolean notLeader(StatusRuntimeException failure) {
        return WireErrors.detail(failure).map(detail -> detail.getReason()
                == io.fencer.api.v1.Reason.REASON_NOT_LEADER).orElse(false);
    }

    /**
     * Runs {@code attempt}, retried as {@code retry} allows, and counts the attempts made in {@code attempts}
     * (null when the caller does not care).
     *
     * @throws UnavailableException when the store did not answer within the call timeout; the call may or may not
     *     have taken effect
     * @throws io.fencer.core.FencerException of the store's reason when the store refused the call
     */
    <T> T call(String operation, Retry retry, int[] attempts, Attempt<T> attempt) {
        return call(operation, retry, callTimeoutNanos, attempts, attempt);
    }

    private <T> T call(String operation, Retry retry, long budgetNanos, int[] attempts, Attempt<T> attempt) {
        RetryBudget budget = new RetryBudget(budgetNanos, sleeper, retry != Retry.READ);
        int made = 0;
        boolean electing = false;
        boolean followedLast = false;
        String endpoint = current;
        while (true) {
            Endpoint to = channelOf(endpoint);
            long remaining = budget.remainingNanos();
            long attemptNanos = retry != Retry.ONCE ? Math.min(remaining, attemptTimeoutNanos) : remaining;
            made++;
            if (attempts != null) {
                attempts[0] = made;
            }
            try {
                T result = attempt.run(new StoreCalls(to.stub(), to.pipeline(), to.peers(), attemptNanos));
                answered = true;
                return result;
            } catch (StatusRuntimeException failure) {
                answered |= !Unreachable.neverSent(failure);
                if (!Router.isRetryable(failure)) {
                    throw WireErrors.toException(failure);
                }
                budget.failed(failure);
                if (Thread.currentThread().isInterrupted()) {
                    throw budget.interrupted(operation);
                }
                boolean refusedUntaken = notLeader(failure);
                if (!electing && Router.answeredByGroup(failure)) {
                    electing = true; // the group is electing: the call waits one out at the least
                    budget.extendTo(System.nanoTime() + Router.ELECTION_WAIT_NANOS);
                }
                if (!answered && budget.unreachableFor(unreachableTimeoutNanos)) {
                    throw unreachable(operation, budget);
                }
                // A call sent at most once may still go elsewhere when this attempt never reached a store.
                boolean mayRetry = (retry != Retry.ONCE || refusedUntaken || Unreachable.neverSent(failure))
                        && !to.channel().isShutdown();
                String next = mayRetry ? moveFrom(endpoint, failure) : endpoint;
                // Follow a named leader at once, but not twice in a row: two peers naming each other must not spin.
                long pauseNanos = refusedUntaken && !next.equals(endpoint) && !followedLast ? 0
                        : budget.nextBackoffNanos();
                followedLast = pauseNanos == 0;
                if (!mayRetry || !budget.pauseBeforeRetry(operation, pauseNanos)) {
                    throw budget.reachedNoServer() ? unreachable(operation, budget)
                            : unavailable(operation, made, budget);
                }
                endpoint = next;
                Endpoint nextChannel = channelOf(endpoint);
                // do not wait for gRPC's own reconnect backoff (up to 2 minutes): a restarted store is used at once
                if (nextChannel.channel().getState(false) == ConnectivityState.TRANSIENT_FAILURE) {
                    nextChannel.channel().resetConnectBackoff();
                }
            }
        }
    }

    private UnavailableException unavailable(String operation, int attempts, RetryBudget budget) {
        return new UnavailableException(operation + " failed: the store at " + describeEndpoints()
                + " did not answer ("
                + attempts + (attempts == 1 ? " attempt" : " attempts") + " within "
                + NANOSECONDS.toMillis(callTimeoutNanos) + " ms; last error: " + budget.lastErrors()
                + ")" + budget.outcome(), budget.lastFailure());
    }

    /**
     * The failure of a call that never reached the store, whether the unreachable timeout or the call's own ended it:
     * say where it tried and why, and that nothing was sent.
     */
    private UnavailableException unreachable(String operation, RetryBudget budget) {
        return new UnavailableException(operation + " failed: cannot connect to the store at " + describeEndpoints()
                + " ("
                + budget.whyUnreachable() + ", for "
                + NANOSECONDS.toMillis(budget.elapsedNanos()) + " ms)" + budget.outcome(), budget.lastFailure());
    }

    private String describeEndpoints() {
        synchronized (endpoints) {
            return endpoints.size() == 1 ? endpoints.get(0) : String.join(",", endpoints);
        }
    }

    /** Shuts the channels down, waiting briefly for calls in flight. Idempotent. */
    @Override
    public void close() {
        synchronized (channels) {
            closed = true;
        }
        for (Endpoint endpoint : channels.values()) {
            if (endpoint.pipeline() != null) {
                endpoint.pipeline().close(); // an open stream would hold the channel's graceful shutdown up
            }
            endpoint.channel().shutdown();
        }
        for (Endpoint endpoint : channels.values()) {
            try {
                if (!endpoint.channel().awaitTermination(SHUTDOWN_WAIT_MILLIS, MILLISECONDS)) {
                    endpoint.channel().shutdownNow();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                endpoint.channel().shutdownNow();
            }
        }
        eventLoops.close();
    }
}
