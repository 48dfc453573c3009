package io.fencer.server.locks;

import io.fencer.api.v1.AcquireResponse;
import io.fencer.core.FencingToken;
import io.fencer.core.InternalException;
import io.fencer.core.TokenKeys;
import io.fencer.core.internal.LockName;
import io.fencer.lock.Command;
import io.fencer.lock.LockView;
import io.fencer.lock.Result;
import io.fencer.lock.SecretHash;
import io.fencer.server.raft.Proposer;
import io.fencer.server.raft.RaftLockStateMachine;
import io.fencer.server.rpc.Replies;
import io.grpc.Deadline;
import io.grpc.stub.ServerCallStreamObserver;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * One waiting Acquire call ({@code wait_millis > 0}), from its proposal to its single answer.
 *
 * <p>It registers with {@link PendingAcquires} before proposing, so a grant applied right after the queued result
 * is never missed. Once queued it waits for the grant, the end of its session, or the end of the wait
 * ({@code min(wait_millis, the call's deadline)}) or a cancellation by the client; the latter two propose
 * {@code CancelWait} and answer from its result: a grant that won the race is still answered as acquired. When
 * several calls wait for the same session and lock (client retries), a call whose wait ends leaves the queue
 * place to the others.
 */
final class AcquireCall {
    private final PendingAcquires pending;
    private final Proposer proposer;
    private final RaftLockStateMachine stateMachine;
    private final ScheduledExecutorService timers;
    private final ServerCallStreamObserver<AcquireResponse> call;
    /** What is proposed: a {@link Command.Acquire} or a {@link Command.AcquirePermit}. */
    private final Command proposal;
    /** The wait in the state machine: the session and the lock (or semaphore) it queues on. */
    private final long sessionId;
    private final SecretHash secretHash;
    private final LockName waitName;
    private final String requestId;
    /** True for a semaphore's permit: its grants are answered with the slot's semaphore and index. */
    private final boolean permit;
    /** For a multi-lock, its locks in the order named (it waits under the first); else null. */
    private final java.util.List<String> group;
    private final long waitMillis;
    private final boolean early;
    private final Deadline deadline;
    private final TokenKeys keys;
    private PendingAcquires.Waiter waiter;
    private ScheduledFuture<?> timeout; // guarded by this
    private boolean queued; // guarded by this
    private boolean waitOver; // guarded by this
    private boolean answered; // guarded by this

    AcquireCall(PendingAcquires pending, Proposer proposer, RaftLockStateMachine stateMachine,
            ScheduledExecutorService timers, ServerCallStreamObserver<AcquireResponse> call,
            Command.Acquire acquire, long waitMillis, Deadline deadline, TokenKeys keys, boolean early) {
        this(new Services(pending, proposer, stateMachine, timers, keys), call, acquire,
                new Wait(acquire.sessionId(), acquire.secretHash(), acquire.lockName(), acquire.requestId(),
                        acquire.waitQueued(), false, null, early), waitMillis, deadline);
    }

    /** A waiting acquire of a semaphore's permit; as the other constructor. */
    AcquireCall(PendingAcquires pending, Proposer proposer, RaftLockStateMachine stateMachine,
            ScheduledExecutorService timers, ServerCallStreamObserver<AcquireResponse> call,
            Command.AcquirePermit acquire, long waitMillis, Deadline deadline, TokenKeys keys) {
        this(new Services(pending, proposer, stateMachine, timers, keys), call, acquire,
                new Wait(acquire.sessionId(), acquire.secretHash(), acquire.semaphoreName(), acquire.requestId(),
                        acquire.waitQueued(), true, null, false), waitMillis, deadline);
    }

    /** A waiting multi-lock; it waits under its first lock. As the other constructors. */
    AcquireCall(PendingAcquires pending, Proposer proposer, RaftLockStateMachine stateMachine,
            ScheduledExecutorService timers, ServerCallStreamObserver<AcquireResponse> call,
            Command.AcquireAll acquire, long waitMillis, Deadline deadline, TokenKeys keys) {
        this(new Services(pending, proposer, stateMachine, timers, keys), call, acquire,
                new Wait(acquire.sessionId(), acquire.secretHash(), acquire.lockNames().get(0), acquire.requestId(),
                        acquire.waitQueued(), false, acquire.locks(), false), waitMillis, deadline);
    }

    /** What the three kinds of waiting call have in common, taken from their commands. */
    private record Services(PendingAcquires pending, Proposer proposer, RaftLockStateMachine stateMachine,
            ScheduledExecutorService timers, TokenKeys keys) {}

    /**
     * The wait a command asks for: its session, the name it queues under, how its grant is answered, and whether
     * its client takes a grant answered before it is durable ({@code early}: a plain exclusive lock's only).
     */
    private record Wait(long sessionId, SecretHash secretHash, LockName waitName, String requestId,
            boolean waitQueued, boolean permit, java.util.List<String> group, boolean early) {}

    private AcquireCall(Services services, ServerCallStreamObserver<AcquireResponse> call, Command proposal,
            Wait wait, long waitMillis, Deadline deadline) {
        this.pending = services.pending();
        this.proposer = services.proposer();
        this.stateMachine = services.stateMachine();
        this.timers = services.timers();
        this.call = call;
        this.proposal = Objects.requireNonNull(proposal, "proposal");
        if (!wait.waitQueued() || waitMillis <= 0) {
            throw new IllegalArgumentException("a waiting acquire needs waitQueued and wait > 0: " + proposal + ", "
                    + waitMillis + " ms");
        }
        this.sessionId = wait.sessionId();
        this.secretHash = wait.secretHash();
        this.waitName = wait.waitName();
        this.requestId = wait.requestId();
        this.permit = wait.permit();
        this.group = wait.group();
        this.waitMillis = waitMillis;
        this.early = wait.early();
        this.deadline = deadline;
        this.keys = services.keys();
    }

    /**
     * Registers the wait and proposes the Acquire; must run in the service method (it sets the cancel hook). The
     * quota {@code reservation} made for it is given back once the Acquire is applied or failed.
     */
    void start(QuotaLedger.Reservation reservation) {
        waiter = pending.register(sessionId, waitName.value(), permit, early, requestId);
        call.setOnCancelHandler(this::endWait);
        proposer.propose(proposal).whenComplete((result, error) -> {
            reservation.release();
            onAcquired(result, error);
        });
    }

    private void onAcquired(Result result, Throwable error) {
        if (error != null) {
            answer(null, error);
            return;
        }
        if (result instanceof Result.Granted granted) {
            answer(granted(granted.token()), null);
        } else if (result instanceof Result.GrantedAll all) {
            answer(allAcquired(all.tokens(), keys), null);
        } else if (result instanceof Result.Busy busy) {
            answer(notAcquired(busy.holder()), null);
        } else if (result instanceof Result.Rejected rejected) {
            answer(null, rejected.error());
        } else if (result instanceof Result.Queued) {
            waitInQueue();
        } else {
            answer(null, new InternalException("acquire answered " + result));
        }
    }

    private void waitInQueue() {
        boolean endNow;
        synchronized (this) {
            queued = true;
            endNow = waitOver; // cancelled by the client before the queued result arrived
            long millis = waitMillis;
            if (deadline != null) {
                millis = Math.min(millis, Math.max(0, deadline.timeRemaining(TimeUnit.MILLISECONDS)));
            }
            if (!endNow && !answered) {
                timeout = timers.schedule(this::endWait, millis, TimeUnit.MILLISECONDS);
            }
        }
        waiter.outcome.whenComplete((token, error) -> answer(error == null ? granted(token) : null, error));
        if (endNow) {
            cancelWait();
        }
    }

    /** The wait ran out or the client cancelled: leave the queue, unless the answer is already decided. */
    private void endWait() {
        synchronized (this) {
            if (answered || waitOver) {
                return;
            }
            waitOver = true;
            if (!queued) {
                return; // the queued result does it: a CancelWait must not overtake its Acquire
            }
        }
        cancelWait();
    }

    private void cancelWait() {
        int others = pending.unregister(waiter);
        if (others < 0) {
            return; // an event completed the waiter; its outcome answers
        }
        if (others > 0) {
            answerWithHolder(); // a retry of this acquire still waits: leave it the place in the queue
            return;
        }
        Command.CancelWait cancel = new Command.CancelWait(sessionId, secretHash, waitName, requestId);
        proposer.propose(cancel).whenComplete((result, error) -> {
            if (error != null) {
                answer(null, error);
            } else if (result instanceof Result.Granted granted) {
                answer(granted(granted.token()), null); // the grant won the race with the wait's end
            } else if (result instanceof Result.Rejected rejected) {
                answer(null, rejected.error());
            } else {
                answerWithHolder();
            }
        });
    }

    private void answerWithHolder() {
        if (permit) {
            answer(notAcquired(null), null);
            return;
        }
        Optional<LockView> view = stateMachine.readLocal(machine -> machine.describe(waitName.value()));
        answer(notAcquired(view.map(LockView::anyHolder).orElse(null)), null);
    }

    /** Returns the answer of a grant: a permit's token names its semaphore and slot. */
    private AcquireResponse granted(FencingToken token) {
        if (group != null) {
            return groupAcquired();
        }
        return permit ? permitAcquired(token, keys) : acquired(token, keys);
    }

    /**
     * Answers a multi-lock granted while it waited: all its locks were granted in one step, whose events completed
     * this call with its first lock's token; the others are read from the state that step left.
     */
    private AcquireResponse groupAcquired() {
        java.util.List<FencingToken> tokens = stateMachine.readLocal(machine -> {
            java.util.List<FencingToken> held = new java.util.ArrayList<>(group.size());
            for (String lock : group) {
                machine.describe(lock).filter(view -> view.holderSessionId() == sessionId)
                        .ifPresent(view -> held.add(view.holder()));
            }
            return held;
        });
        if (tokens.size() != group.size()) {
            throw new InternalException("multi-lock " + group + " of session " + sessionId + " was granted, but the"
                    + " session holds only " + tokens);
        }
        return allAcquired(tokens, keys);
    }

    static AcquireResponse allAcquired(java.util.List<FencingToken> tokens, TokenKeys keys) {
        AcquireResponse.Builder response = AcquireResponse.newBuilder().setAcquired(true)
                .setToken(Protos.token(tokens.get(0), keys));
        tokens.forEach(token -> response.addTokens(Protos.token(token, keys)));
        return response.build();
    }

    private void answer(AcquireResponse response, Throwable error) {
        synchronized (this) {
            if (answered) {
                return;
            }
            answered = true;
            if (timeout != null) {
                timeout.cancel(false);
            }
        }
        pending.unregister(waiter);
        Replies.send(call, response == null || !early ? response : withMarks(response), error);
    }

    /**
     * Adds, to a grant answered before its release was durable, where that release was queued and how far this peer's
     * commands were durable then (locks.proto's AcquireResponse); any other answer goes as it is.
     */
    private AcquireResponse withMarks(AcquireResponse response) {
        Proposer.EarlyRelease handOff = waiter.handOff;
        if (handOff == null || !response.getAcquired()) {
            return response;
        }
        return response.toBuilder().setPendingSequence(handOff.sequence())
                .setDurable(Protos.durableMark(handOff.durable())).build();
    }

    static AcquireResponse acquired(FencingToken token, TokenKeys keys) {
        return AcquireResponse.newBuilder().setAcquired(true).setToken(Protos.token(token, keys)).build();
    }

    static AcquireResponse permitAcquired(FencingToken token, TokenKeys keys) {
        return AcquireResponse.newBuilder().setAcquired(true).setToken(Protos.permitToken(token, keys)).build();
    }

    /**
     * Returns the answer of an acquire that was not granted. The holder's token is never signed here: a signed
     * sequencer is a credential that only its grantee receives, or any caller could write as the holder.
     */
    static AcquireResponse notAcquired(FencingToken holder) {
        AcquireResponse.Builder response = AcquireResponse.newBuilder().setAcquired(false);
        if (holder != null) {
            response.setHolder(Protos.token(holder, null));
        }
        return response.build();
    }
}
