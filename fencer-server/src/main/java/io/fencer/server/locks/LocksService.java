package io.fencer.server.locks;

import io.fencer.api.v1.AcquireAllRequest;
import io.fencer.api.v1.AcquirePermitRequest;
import io.fencer.api.v1.AcquireRequest;
import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.CloseSessionRequest;
import io.fencer.api.v1.CloseSessionResponse;
import io.fencer.api.v1.DescribeRequest;
import io.fencer.api.v1.DescribeSemaphoreRequest;
import io.fencer.api.v1.KeepAliveRequest;
import io.fencer.api.v1.KeepAliveResponse;
import io.fencer.api.v1.ListRequest;
import io.fencer.api.v1.ListResponse;
import io.fencer.api.v1.LockEvent;
import io.fencer.api.v1.LockInfo;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.OpenSessionRequest;
import io.fencer.api.v1.OpenSessionResponse;
import io.fencer.api.v1.PipelineRequest;
import io.fencer.api.v1.PipelineResponse;
import io.fencer.api.v1.ReleaseRequest;
import io.fencer.api.v1.ReleaseResponse;
import io.fencer.api.v1.RenewRequest;
import io.fencer.api.v1.RenewResponse;
import io.fencer.api.v1.RevokeRequest;
import io.fencer.api.v1.RevokeResponse;
import io.fencer.api.v1.SemaphoreInfo;
import io.fencer.api.v1.ValidateRequest;
import io.fencer.api.v1.ValidateResponse;
import io.fencer.api.v1.WatchRequest;
import io.fencer.core.FencingToken;
import io.fencer.core.InternalException;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LimitExceededException;
import io.fencer.core.internal.LockName;
import io.fencer.core.internal.PermitSlots;
import io.fencer.core.SessionUnauthenticatedException;
import io.fencer.core.TokenKeys;
import io.fencer.core.UnavailableException;
import io.fencer.lock.Command;
import io.fencer.lock.Limits;
import io.fencer.lock.LockStateMachine;
import io.fencer.lock.LockView;
import io.fencer.lock.Result;
import io.fencer.lock.SecretHash;
import io.fencer.lock.Validation;
import io.fencer.server.auth.Authorizer;
import io.fencer.server.auth.Permission;
import io.fencer.server.raft.ApplyHalt;
import io.fencer.server.raft.Proposer;
import io.fencer.server.raft.RaftLockStateMachine;
import io.fencer.server.raft.RaftNode;
import io.fencer.server.rpc.Identities;
import io.fencer.server.rpc.PipelineStream;
import io.fencer.server.rpc.Replies;
import io.fencer.server.rpc.StreamFlow;
import io.fencer.server.watch.WatchHub;
import io.grpc.Context;
import io.grpc.MethodDescriptor;
import io.grpc.stub.ServerCallStreamObserver;
import io.grpc.stub.StreamObserver;
import io.micrometer.core.instrument.MeterRegistry;
import io.fencer.server.IdentityQuotas;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.BiConsumer;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The gRPC service {@code fencer.v1.Locks}: checks leadership, validates every field, proposes commands through
 * the {@link Proposer} and maps results and errors to the wire. Calls never block a gRPC thread: answers are sent
 * from the completion of proposals and reads.
 *
 * <p>Sessions: OpenSession hands out the secret {@link SessionSecrets} draws (the command carries only its hash and
 * the caller's {@link Identities identity}); every call for a session presents the secret, checked against the
 * {@link SessionKeeper}'s lease before anything is proposed, and by the state machine again in the command. Only a
 * grantee's own Acquire answer carries a signed sequencer; every other answer names tokens unsigned.
 *
 * <p>Quotas: a call that may open a session, take a lock or queue a wait reserves that much of its identity's
 * quotas in the {@link QuotaLedger} before it proposes (a session's identity for quotas is the one it recorded when
 * it opened), and gives the reservation back once the proposal is applied or failed; over a quota, nothing is
 * proposed and the call fails RESOURCE_EXHAUSTED naming the identity and the quota.
 *
 * <p>KeepAlive streams and Renew, which renew leases without proposing, are served by {@link KeepAliveStreams}.
 */
public final class LocksService extends LocksGrpc.LocksImplBase {
    /**
     * The audit trail of operators' acts (revokes), under its own logger name so that an operator can route it to
     * its own file: who did what to which lock and token, done or refused.
     */
    private static final Logger AUDIT = LoggerFactory.getLogger("io.fencer.server.audit");
    /**
     * The most released tokens a CloseSession answer lists (locks.proto): 1,000 tokens of 256-byte names, some 600 KB
     * with their sequencers, stay far below a client's 4 MiB message limit, where a session's 10,000 did not.
     */
    static final int RELEASED_LISTED_MAX = 1_000;
    /**
     * The most waiters, and the most shared holders, a Describe or List shows of one lock (the rest are counted):
     * 1,000 shared holders of 256-byte names under 256-byte identities are about 1 MB.
     */
    static final int QUEUE_SHOWN_MAX = 1_000;
    /**
     * The size past which a List page takes no further lock: with one lock shown whole beyond it, at most about
     * 2.5 MB, under the 4 MiB a gRPC client reads by default.
     */
    static final int LIST_PAGE_BYTES_MAX = 1 << 20;

    private final RaftNode raft;
    private final Proposer proposer;
    private final SessionKeeper keeper;
    private final PendingAcquires pending;
    private final RaftLockStateMachine stateMachine;
    private final Limits limits;
    private final ScheduledExecutorService timers;
    /** Signs the sequencer of a grant in its grantee's Acquire answer; null = unsigned. */
    private final TokenKeys keys;
    private final SessionSecrets secrets;
    /** The KeepAlive streams and Renew calls: the lease renewals, which never propose. */
    private final KeepAliveStreams keepAlives;
    private final Set<PipelineStream<?, ?>> pipelineStreams = ConcurrentHashMap.newKeySet();
    private final StreamFlow pipelineFlow = new StreamFlow("locks.pipeline");
    /** Records a pipelined call's latency under its unary method, as the metrics interceptor does for unary calls. */
    private final BiConsumer<MethodDescriptor<?, ?>, Long> latencyNanos;
    /** Checks each call's permission, after its fields are validated and before anything is proposed or read. */
    private final Authorizer authorizer;
    /** Serves Watch streams from this peer's history of applied lock events. */
    private final WatchHub watches;
    /** The per-identity quotas, checked before a command that may take more is proposed. */
    private final QuotaLedger quotas;
    /** Answers a release's grant before the release is durable, where that can be told (a group of one). */
    private final EarlyHandOffs handOffs;
    /** The quotas of each identity, for those this peer counts itself (its Watch streams). */
    private final Function<String, IdentityQuotas> quotasOf;

    public LocksService(RaftNode raft, Proposer proposer, SessionKeeper keeper, PendingAcquires pending,
            RaftLockStateMachine stateMachine, Limits limits, ScheduledExecutorService timers, TokenKeys keys,
            SessionSecrets secrets, BiConsumer<MethodDescriptor<?, ?>, Long> latencyNanos, Authorizer authorizer,
            WatchHub watches, Function<String, IdentityQuotas> quotasOf, int grantsAhead) {
        this.raft = raft;
        this.proposer = proposer;
        this.keeper = keeper;
        this.pending = pending;
        this.stateMachine = stateMachine;
        this.limits = limits;
        this.timers = timers;
        this.keys = keys;
        this.secrets = secrets;
        this.latencyNanos = latencyNanos;
        this.authorizer = authorizer;
        this.watches = watches;
        this.quotas = new QuotaLedger(stateMachine::usage, quotasOf);
        this.quotasOf = quotasOf;
        this.keepAlives = new KeepAliveStreams(raft, keeper, authorizer, this::checkLeader, proposer::durableMark);
        this.handOffs = new EarlyHandOffs(grantsAhead, raft, proposer, stateMachine, pending);
    }

    @Override
    public void openSession(OpenSessionRequest request, StreamObserver<OpenSessionResponse> out) {
        serve(out, () -> {
            long ttlMillis = RequestChecks.ttlMillis(request.getTtlMillis(), limits);
            String requestId = RequestChecks.requestId(request.getRequestId(), false);
            byte[] retryKey = RequestChecks.retryKey(request.getRetryKey(), requestId);
            authorizer.checkSomewhere(Permission.LOCK);
            String identity = Identities.current();
            String quotaIdentity = Identities.quotaIdentity();
            String secret = secrets.forOpen(identity, requestId, retryKey);
            QuotaLedger.Reservation reservation = admit(quotaIdentity, 1, 0, 0, () -> !requestId.isEmpty()
                    && stateMachine.readLocal(machine -> machine.sessionOpenedBy(requestId).isPresent()));
            Command.OpenSession open = new Command.OpenSession(requestId, ttlMillis, identity, SecretHash.of(secret),
                    quotaIdentity);
            return proposeAdmitted(open, reservation).thenApply(result -> {
                // A retry the state machine refuses (another identity, another secret) throws here: no secret leaves.
                Result.SessionOpened opened = expect(result, Result.SessionOpened.class);
                return OpenSessionResponse.newBuilder().setSessionId(opened.sessionId())
                        .setTtlMillis(opened.ttlMillis()).setSecret(secret).build();
            });
        });
    }

    @Override
    public void closeSession(CloseSessionRequest request, StreamObserver<CloseSessionResponse> out) {
        serve(out, () -> {
            long sessionId = RequestChecks.sessionId("session_id", request.getSessionId());
            authorizer.checkSomewhere(Permission.LOCK);
            SecretHash presented = authenticate(sessionId, request.getSessionSecret());
            return proposer.propose(new Command.CloseSession(sessionId, presented)).thenApply(result -> {
                Result.SessionEnded ended = expect(result, Result.SessionEnded.class);
                CloseSessionResponse.Builder response = CloseSessionResponse.newBuilder()
                        .setReleasedTotal(ended.released().size());
                ended.released().stream().limit(RELEASED_LISTED_MAX)
                        .forEach(token -> response.addReleased(Protos.token(token, null)));
                return response.build();
            });
        });
    }

    @Override
    public void acquire(AcquireRequest request, StreamObserver<AcquireResponse> out) {
        ServerCallStreamObserver<AcquireResponse> call = (ServerCallStreamObserver<AcquireResponse>) out;
        try {
            checkLeader();
            long sessionId = RequestChecks.sessionId("session_id", request.getSessionId());
            LockName lock = RequestChecks.newLock("lock", request.getLock());
            String requestId = RequestChecks.requestId(request.getRequestId(), true);
            long waitMillis = RequestChecks.waitMillis(request.getWaitMillis());
            authorizer.check(Permission.LOCK, lock.value());
            SecretHash presented = authenticate(sessionId, request.getSessionSecret());
            io.fencer.core.LockMode mode = Protos.mode("mode", request.getModeValue());
            Command.Acquire acquire = new Command.Acquire(sessionId, presented, lock, requestId, waitMillis > 0,
                    mode);
            QuotaLedger.Reservation reservation = admitLocks(sessionId, List.of(lock.value()), waitMillis > 0);
            if (waitMillis > 0) {
                boolean early = request.getAnswerBeforeDurable() && mode == io.fencer.core.LockMode.EXCLUSIVE;
                new AcquireCall(pending, proposer, stateMachine, timers, call, acquire, waitMillis,
                        Context.current().getDeadline(), keys, early).start(reservation);
                return;
            }
            proposeAdmitted(acquire, reservation).thenCompose(result -> tryAcquireResponse(sessionId, presented,
                    lock, requestId, result, false))
                    .whenComplete((response, error) -> Replies.send(call, response, error));
        } catch (RuntimeException e) {
            Replies.send(call, null, e);
        }
    }

    @Override
    public void acquirePermit(AcquirePermitRequest request, StreamObserver<AcquireResponse> out) {
        ServerCallStreamObserver<AcquireResponse> call = (ServerCallStreamObserver<AcquireResponse>) out;
        try {
            checkLeader();
            long sessionId = RequestChecks.sessionId("session_id", request.getSessionId());
            LockName semaphore = RequestChecks.newLock("semaphore", request.getSemaphore());
            Limits.checkPermits(semaphore.value(), request.getPermits() & 0xffffffffL);
            String requestId = RequestChecks.requestId(request.getRequestId(), true);
            long waitMillis = RequestChecks.waitMillis(request.getWaitMillis());
            authorizer.checkPrefix(Permission.LOCK, semaphore.value() + PermitSlots.INFIX);
            SecretHash presented = authenticate(sessionId, request.getSessionSecret());
            Command.AcquirePermit acquire = new Command.AcquirePermit(sessionId, presented, semaphore,
                    request.getPermits(), requestId, waitMillis > 0);
            QuotaLedger.Reservation reservation = admitLocks(sessionId, List.of(semaphore.value()), waitMillis > 0);
            if (waitMillis > 0) {
                new AcquireCall(pending, proposer, stateMachine, timers, call, acquire, waitMillis,
                        Context.current().getDeadline(), keys).start(reservation);
                return;
            }
            proposeAdmitted(acquire, reservation).thenCompose(result -> result instanceof Result.Granted granted
                    ? CompletableFuture.completedFuture(AcquireCall.permitAcquired(granted.token(), keys))
                    : tryAcquireResponse(sessionId, presented, semaphore, requestId, result, true))
                    .whenComplete((response, error) -> Replies.send(call, response, error));
        } catch (RuntimeException e) {
            Replies.send(call, null, e);
        }
    }

    @Override
    public void acquireAll(AcquireAllRequest request, StreamObserver<AcquireResponse> out) {
        ServerCallStreamObserver<AcquireResponse> call = (ServerCallStreamObserver<AcquireResponse>) out;
        try {
            checkLeader();
            long sessionId = RequestChecks.sessionId("session_id", request.getSessionId());
            Command.AcquireAll.checkCount(request.getLocksCount()); // before checking thousands of names
            java.util.List<LockName> names = new java.util.ArrayList<>(request.getLocksCount());
            for (String lock : request.getLocksList()) {
                names.add(RequestChecks.newLock("locks", lock));
                authorizer.check(Permission.LOCK, lock);
            }
            Command.AcquireAll.checkLocks(names);
            String requestId = RequestChecks.requestId(request.getRequestId(), true);
            long waitMillis = RequestChecks.waitMillis(request.getWaitMillis());
            SecretHash presented = authenticate(sessionId, request.getSessionSecret());
            Command.AcquireAll acquire = new Command.AcquireAll(sessionId, presented, names, requestId,
                    waitMillis > 0);
            QuotaLedger.Reservation reservation = admitLocks(sessionId, acquire.locks(), waitMillis > 0);
            if (waitMillis > 0) {
                new AcquireCall(pending, proposer, stateMachine, timers, call, acquire, waitMillis,
                        Context.current().getDeadline(), keys).start(reservation);
                return;
            }
            proposeAdmitted(acquire, reservation).thenApply(result -> result instanceof Result.GrantedAll all
                    ? AcquireCall.allAcquired(all.tokens(), keys) : tryAllResponse(result))
                    .whenComplete((response, error) -> Replies.send(call, response, error));
        } catch (RuntimeException e) {
            Replies.send(call, null, e);
        }
    }

    @Override
    public void describeSemaphore(DescribeSemaphoreRequest request, StreamObserver<SemaphoreInfo> out) {
        serve(out, () -> {
            String semaphore = RequestChecks.lock("semaphore", request.getSemaphore()).value();
            authorizer.check(Permission.READ, semaphore);
            return proposer.read(machine -> machine.describeSemaphore(semaphore).map(Protos::semaphoreInfo)
                    .orElseGet(() -> SemaphoreInfo.newBuilder().setSemaphore(semaphore).build()));
        });
    }

    /**
     * Answers an Acquire that does not wait. When the session is already queued for the lock and no call on this
     * leader waits for that place, the wait is an orphan: the call that queued it is gone (its answer was lost, or it
     * went to a deposed leader), and this call is typically its retry with {@code wait_millis = 0} after the wait ran
     * out. Left queued, the lock would later be granted to a session no call waits for, so the place is
     * given up with {@code CancelWait} and the answer is that command's: a grant that won the race is acquired, else
     * not acquired, which is then true. A place some call on this leader still waits for is left to it. A permit's
     * try does the same with the semaphore's name ({@code permit}: a late grant is answered as a permit).
     */
    private CompletableFuture<AcquireResponse> tryAcquireResponse(long sessionId, SecretHash secretHash,
            LockName waitName, String requestId, Result result, boolean permit) {
        if (result instanceof Result.Busy busy) {
            return CompletableFuture.completedFuture(AcquireCall.notAcquired(busy.holder()));
        }
        if (result instanceof Result.Queued queued) {
            if (pending.waiting(sessionId, waitName.value(), permit) > 0) {
                return CompletableFuture.completedFuture(notAcquiredNow(queued.lock()));
            }
            Command.CancelWait cancel = new Command.CancelWait(sessionId, secretHash, waitName, requestId);
            return proposer.propose(cancel).thenApply(cancelled -> {
                if (cancelled instanceof Result.Granted granted) {
                    return permit ? AcquireCall.permitAcquired(granted.token(), keys)
                            : AcquireCall.acquired(granted.token(), keys);
                }
                expect(cancelled, Result.WaitCancelled.class);
                return notAcquiredNow(queued.lock());
            });
        }
        Result.Granted granted = expect(result, Result.Granted.class);
        return CompletableFuture.completedFuture(AcquireCall.acquired(granted.token(), keys));
    }

    private AcquireResponse notAcquiredNow(String lock) {
        return AcquireCall.notAcquired(stateMachine.readLocal(machine -> machine.describe(lock))
                .map(LockView::anyHolder).orElse(null));
    }

    /**
     * Answers a multi-lock try that was not granted. A session already queued for the group through another call
     * is left queued: unlike a single lock's try, an orphaned multi-lock wait is not cancelled here (a known gap: it
     * stays queued, and may be granted to a session no call waits for, until that session ends); the group's first
     * lock names the holder.
     */
    private AcquireResponse tryAllResponse(Result result) {
        if (result instanceof Result.Busy busy) {
            return AcquireCall.notAcquired(busy.holder());
        }
        Result.Queued queued = expect(result, Result.Queued.class);
        return notAcquiredNow(queued.lock());
    }

    @Override
    public void release(ReleaseRequest request, StreamObserver<ReleaseResponse> out) {
        serve(out, () -> {
            FencingToken token = RequestChecks.token("token", request.getToken());
            authorizer.check(Permission.LOCK, token.lock());
            long sessionId = RequestChecks.sessionId("session_id", request.getSessionId());
            SecretHash presented = authenticate(sessionId, request.getSessionSecret());
            Command.Release release = new Command.Release(sessionId, presented, token.lock(), token.value());
            if (request.getAnswerBeforeDurable() && answersEarly(release)) {
                Proposer.EarlyRelease early = proposer.proposeEarly(release);
                if (early != null) {
                    return CompletableFuture.completedFuture(ReleaseResponse.newBuilder()
                            .setReleased(Protos.token(token, null)).setPendingSequence(early.sequence())
                            .setDurable(Protos.durableMark(early.durable())).build());
                }
            }
            // A release that grants a waiter may answer that waiter now (a group of one; see EarlyHandOffs); its own
            // answer waits for it to apply either way.
            Proposer.EarlyRelease handOff = handOffs.tryHandOff(release);
            CompletableFuture<Result> applied = handOff != null ? handOff.result() : proposer.propose(release);
            return applied.thenApply(result -> {
                Result.Released released = expect(result, Result.Released.class);
                // Signed sequencers are credentials: the releaser has its own already, the next holder gets its own
                // in its Acquire answer. A release answer names both tokens unsigned.
                ReleaseResponse.Builder response = ReleaseResponse.newBuilder()
                        .setReleased(Protos.token(released.released(), null));
                if (released.next() != null) {
                    response.setNext(Protos.token(released.next(), null));
                }
                return response.setDurable(Protos.durableMark(proposer.durableMark())).build();
            });
        });
    }

    /**
     * True when this peer may answer {@code release} before it is durable (see locks.proto's Release): it leads a group
     * of one, where a crash is a restart every client sees in the DurableMark's incarnation, and the release must
     * succeed as the state stands, granting nobody. A command queued before it may still end the grant (its session
     * expiring): the release then finds the lock released already, which is what its answer said.
     */
    private boolean answersEarly(Command.Release release) {
        return raft.configurationSize() == 1 && raft.isLeader()
                && stateMachine.readLocal(machine -> machine.releasesAlone(release));
    }

    /**
     * Revokes a lock's exclusive grant for an operator (see locks.proto): {@code admin} on the lock, a group at format
     * level 5 (checked here before proposing, so that no entry a peer of the previous release cannot read is written;
     * the state machine checks it again as it applies), and the configured lock-delay applied as after an expiry.
     * Every outcome past the permission check is written to the audit log with the caller's identity.
     */
    @Override
    public void revoke(RevokeRequest request, StreamObserver<RevokeResponse> out) {
        serve(out, () -> {
            LockName lock = RequestChecks.lock("lock", request.getLock());
            long token = request.getToken();
            if (token < 0) {
                throw new InvalidArgumentException("token", Long.toUnsignedString(token), "token "
                        + Long.toUnsignedString(token) + " of lock '" + lock.value() + "' is above the largest token "
                        + FencingToken.VALUE_MAX);
            }
            authorizer.check(Permission.ADMIN, lock.value());
            String identity = Identities.current();
            int level = stateMachine.readLocal(LockStateMachine::formatLevel);
            if (level < LockStateMachine.FORMAT_LEVEL_REVOKE) {
                throw new InvalidArgumentException("lock", lock.value(), "cannot revoke lock '" + lock.value()
                        + "': the group is at format level " + level + " and revoke needs "
                        + LockStateMachine.FORMAT_LEVEL_REVOKE + " (a peer of the previous release may still run;"
                        + " the leader raises the level once every peer reads it, see fencer status)");
            }
            Command.Revoke revoke = new Command.Revoke(lock, token, identity, keeper.lockDelayEnabled());
            return proposer.propose(revoke).thenApply(result -> revokeResponse(identity, revoke, result));
        });
    }

    private RevokeResponse revokeResponse(String identity, Command.Revoke revoke, Result result) {
        if (result instanceof Result.Rejected rejected) {
            // Names and identities are printed escaped: a name that is not a lock's must not forge log lines.
            AUDIT.info("revoke of lock '{}' (token {}) by '{}' refused: {}", InvalidArgumentException.printable(
                    revoke.lock()), revoke.token(), InvalidArgumentException.printable(identity),
                    InvalidArgumentException.printable(rejected.error().getMessage()));
        }
        Result.Revoked revoked = expect(result, Result.Revoked.class);
        String holder = stateMachine.readLocal(machine -> machine.session(revoked.sessionId())
                .map(io.fencer.lock.SessionView::identity).orElse("?"));
        AUDIT.info("revoked {} of session {} (identity '{}') by '{}'; {}", InvalidArgumentException.printable(
                revoked.revoked().toString()), revoked.sessionId(), InvalidArgumentException.printable(holder),
                InvalidArgumentException.printable(identity), revoked.next() != null ? "granted next: " + revoked.next()
                        : revoke.lockDelay() ? "the lock waits out its lock-delay" : "no waiter");
        RevokeResponse.Builder response = RevokeResponse.newBuilder()
                .setRevoked(Protos.token(revoked.revoked(), null)).setDelayed(revoke.lockDelay());
        if (revoked.next() != null) {
            response.setNext(Protos.token(revoked.next(), null));
        }
        return response.build();
    }

    @Override
    public void validate(ValidateRequest request, StreamObserver<ValidateResponse> out) {
        serve(out, () -> {
            FencingToken token = RequestChecks.token("token", request.getToken());
            authorizer.check(Permission.READ, token.lock());
            return proposer.read(machine -> machine.validate(token)).thenApply(validation -> {
                long remainingMillis = validation.status() == Validation.Status.CURRENT
                        ? keeper.remainingMillis(validation.holderSessionId()) : 0;
                return Protos.validation(validation, remainingMillis);
            });
        });
    }

    @Override
    public void describe(DescribeRequest request, StreamObserver<LockInfo> out) {
        serve(out, () -> {
            String lock = RequestChecks.lock("lock", request.getLock()).value();
            authorizer.check(Permission.READ, lock);
            return proposer.read(machine -> machine.describe(lock, QUEUE_SHOWN_MAX).map(Protos::lockInfo)
                    .orElseGet(() -> Protos.freeLock(lock, machine.floor())));
        });
    }

    @Override
    public void list(ListRequest request, StreamObserver<ListResponse> out) {
        serve(out, () -> {
            String prefix = RequestChecks.prefix(request.getPrefix());
            int limit = RequestChecks.listLimit(request.getLimit());
            String startAfter = RequestChecks.startAfter(request.getStartAfter());
            authorizer.checkPrefix(Permission.READ, prefix); // the whole prefix, or nothing: never a filtered list
            return proposer.read(machine -> listPage(machine, prefix, startAfter, limit));
        });
    }

    /** Returns a page of at most {@code limit} locks that stops once past {@link #LIST_PAGE_BYTES_MAX}. */
    private static ListResponse listPage(LockStateMachine machine, String prefix, String startAfter, int limit) {
        ListResponse.Builder response = ListResponse.newBuilder();
        int[] bytes = {0};
        boolean more = machine.list(prefix, startAfter, QUEUE_SHOWN_MAX, view -> {
            if (response.getLocksCount() == limit || bytes[0] >= LIST_PAGE_BYTES_MAX) {
                return false;
            }
            LockInfo info = Protos.lockInfo(view);
            bytes[0] += info.getSerializedSize();
            response.addLocks(info);
            return true;
        });
        return response.setMore(more).build();
    }

    @Override
    public StreamObserver<KeepAliveRequest> keepAlive(StreamObserver<KeepAliveResponse> out) {
        return keepAlives.open(out);
    }

    /** Renews one session once: the unary form of one KeepAlive message (see {@link KeepAliveStreams#renew}). */
    @Override
    public void renew(RenewRequest request, StreamObserver<RenewResponse> out) {
        keepAlives.renew(request, out);
    }

    @Override
    public StreamObserver<PipelineRequest> pipeline(StreamObserver<PipelineResponse> out) {
        ServerCallStreamObserver<PipelineResponse> call = (ServerCallStreamObserver<PipelineResponse>) out;
        PipelineStream<PipelineRequest, PipelineResponse> stream = new PipelineStream<>(call,
                new LocksPipeline(this), latencyNanos, pipelineStreams::remove, pipelineFlow);
        pipelineStreams.add(stream);
        return stream;
    }

    /** Exports the flow-control counters of the KeepAlive and Pipeline streams to {@code registry}. */
    public void registerStreamMetrics(MeterRegistry registry) {
        keepAlives.flow().register(registry);
        pipelineFlow.register(registry);
    }

    /** Returns the flow-control counters of the KeepAlive streams. */
    public StreamFlow keepAliveFlow() {
        return keepAlives.flow();
    }

    /** Returns the flow-control counters of the Pipeline streams. */
    public StreamFlow pipelineFlow() {
        return pipelineFlow;
    }

    /**
     * Ends every open keepalive and pipeline stream with UNAVAILABLE, so clients move on while the server shuts
     * down.
     */
    public void shutdown() {
        UnavailableException error = new UnavailableException("the server is shutting down");
        keepAlives.shutdown(error);
        for (PipelineStream<?, ?> stream : pipelineStreams) {
            stream.fail(error);
        }
    }


    /**
     * Returns the hash of the secret a call presented for {@code sessionId}, refusing it at once when this leader
     * keeps the session with another secret: a refusal then costs no log entry. The command carries the hash, and the
     * state machine checks it again while it applies the command.
     *
     * @throws SessionUnauthenticatedException when the secret is missing, too long or, known here, wrong
     */
    private SecretHash authenticate(long sessionId, String secret) {
        SecretHash presented = RequestChecks.sessionSecret(sessionId, secret);
        keeper.checkSecret(sessionId, presented);
        return presented;
    }

    /**
     * Reserves the quota a command of {@code sessionId} taking part in {@code names} may use: a lock record for each
     * name, and a wait for each when it may queue. A session this leader does not keep is not counted: the state
     * machine refuses its command (its session ended). At the quota, a retry of the session's own acquire passes
     * without a reservation: it takes nothing more.
     *
     * @throws LimitExceededException when the session's identity would pass a quota
     */
    private QuotaLedger.Reservation admitLocks(long sessionId, List<String> names, boolean mayWait) {
        String quotaIdentity = keeper.quotaIdentity(sessionId);
        if (quotaIdentity == null) {
            return quotas.none();
        }
        return admit(quotaIdentity, 0, names.size(), mayWait ? names.size() : 0, () -> stateMachine.readLocal(
                machine -> names.stream().allMatch(name -> machine.takesPart(sessionId, name))));
    }

    /** Reserves quota for one command, or lets a retry that takes nothing more pass at the quota. */
    private QuotaLedger.Reservation admit(String quotaIdentity, int sessions, int locks, int waiters,
            BooleanSupplier isRetry) {
        try {
            return quotas.reserve(quotaIdentity, sessions, locks, waiters);
        } catch (LimitExceededException e) {
            if (isRetry.getAsBoolean()) {
                return quotas.none();
            }
            throw e;
        }
    }

    /** Proposes {@code command} and gives {@code reservation} back once it is applied or failed. */
    private CompletableFuture<Result> proposeAdmitted(Command command, QuotaLedger.Reservation reservation) {
        return proposer.propose(command).whenComplete((result, error) -> reservation.release());
    }

    /**
     * Refuses a call unless this peer serves: UNAVAILABLE naming the halt while it has halted applying the log (every
     * call, on every peer: its state is not to be trusted), UNAVAILABLE naming the division's state while its Raft
     * division is not running (no leader would ever be known through it), NOT_LEADER on any peer but the leader.
     */
    private void checkLeader() {
        ApplyHalt halted = stateMachine.halt();
        if (halted != null) {
            throw new UnavailableException(halted.message());
        }
        raft.checkLeader();
    }

    /** Checks leadership, runs {@code call}, and answers with its outcome. */
    private <T> void serve(StreamObserver<T> out, Supplier<CompletableFuture<T>> call) {
        CompletableFuture<T> answer;
        try {
            checkLeader();
            answer = call.get();
        } catch (RuntimeException e) {
            answer = CompletableFuture.failedFuture(e);
        }
        answer.whenComplete((response, error) -> Replies.send(out, response, error));
    }

    /** Returns {@code result} as the expected type; a rejection throws its typed error. */
    static <R extends Result> R expect(Result result, Class<R> type) {
        if (result instanceof Result.Rejected rejected) {
            throw rejected.error();
        }
        if (!type.isInstance(result)) {
            throw new InternalException("expected a " + type.getSimpleName() + " result, got " + result);
        }
        return type.cast(result);
    }

    // --- watch ---

    /**
     * Streams lock events under a prefix from this peer's history (see locks.proto): served by every peer of the
     * group, leader or not, so no leadership check; refused by a peer that halted or that the group left out, whose
     * history goes no further. Needs {@code read} on the whole prefix, as List. Each identity may have
     * {@code watchersPerIdentityMax} streams open on this peer.
     */
    @Override
    public void watch(WatchRequest request, StreamObserver<LockEvent> out) {
        ServerCallStreamObserver<LockEvent> call = (ServerCallStreamObserver<LockEvent>) out;
        try {
            ApplyHalt halted = stateMachine.halt();
            if (halted != null) {
                throw new UnavailableException(halted.message()); // its history stopped before the halted entry
            }
            String outside = raft.notInGroup();
            if (outside != null) {
                throw new UnavailableException(outside); // its history ends where the group left it out
            }
            String prefix = RequestChecks.prefix(request.getPrefix());
            authorizer.checkPrefix(Permission.READ, prefix);
            String identity = Identities.quotaIdentity();
            // Checked again before each batch the stream sends, off this call's context: a reloaded ACL that
            // withdraws read ends the open stream, as it refuses a new one (KeepAlive streams do the same).
            String caller = Identities.current();
            Runnable access = () -> authorizer.checkPrefix(caller, Permission.READ, prefix);
            watches.watch(prefix, request.getFromRevision(), request.getFromOrdinal(), call,
                    new WatchHub.Watcher(identity, quotasOf.apply(identity).watchersPerIdentityMax(), access));
        } catch (RuntimeException e) {
            Replies.send(call, null, e);
        }
    }
}
