package io.fencer.core;

import java.util.Objects;
import java.util.concurrent.locks.AbstractQueuedLongSynchronizer;
import java.util.function.Supplier;

/**
 * The in-process guard of one resource scope: it checks a presented token and applies the mutation
 * under one lock, so a refused token can never race an accepted write: a holder paused past its lease, waking after
 * a newer holder wrote, is refused here however late it arrives.
 *
 * <p>A fence is bound to one lock name: tokens of any other lock are refused with
 * {@link ScopeMismatchException}, never compared. Stale tokens are refused with
 * {@link StaleTokenException}, which carries the accepted token. Thread-safe. A mutation must not write through
 * its own fence again: that call is refused with {@link IllegalStateException}, because letting it through would let
 * the inner write advance the accepted token and the outer one then lower it.
 *
 * <pre>{@code
 * Fence fence = Fence.create("orders", FencePolicy.AT_LEAST);
 * fence.run(grant.token(), () -> orders.add(order));   // refused once a newer grant has written
 * }</pre>
 *
 * <p>The accepted token lives in memory only: a resource that must survive restarts stores it with its
 * data and passes it back to {@link #create(String, FencePolicy, long)} when it starts.
 */
public final class Fence {
    private final String scope;
    private final FencePolicy policy;
    private final Mutex mutex = new Mutex();
    private long accepted; // guarded by mutex

    private Fence(String scope, FencePolicy policy, long accepted) {
        this.scope = LockNames.check("scope", scope);
        this.policy = Objects.requireNonNull(policy, "policy");
        if (accepted < FencingToken.NONE || accepted > FencingToken.VALUE_MAX) {
            throw new IllegalArgumentException("accepted token " + accepted + " out of range for scope " + scope);
        }
        this.accepted = accepted;
    }

    /** Creates a fence for {@code scope} that has accepted no token yet. */
    public static Fence create(String scope, FencePolicy policy) {
        return new Fence(scope, policy, FencingToken.NONE);
    }

    /** Creates a fence for {@code scope} that resumes from a durably stored accepted token. */
    public static Fence create(String scope, FencePolicy policy, long accepted) {
        return new Fence(scope, policy, accepted);
    }

    /** Checks {@code token} and, when admitted, runs {@code mutation}, all under the fence's lock. */
    public void run(FencingToken token, Runnable mutation) {
        Objects.requireNonNull(mutation, "mutation");
        call(token, () -> {
            mutation.run();
            return null;
        });
    }

    /**
     * Checks {@code token} and, when admitted, runs {@code mutation} and returns its result, all under the
     * fence's lock. The accepted token advances only when the mutation returns normally: a mutation that
     * throws leaves the fence as it was.
     *
     * @throws ScopeMismatchException when the token belongs to another lock
     * @throws StaleTokenException when the policy refuses the token against the accepted one
     * @throws ModeMismatchException when the token is a shared-mode grant: readers may not write
     * @throws IllegalStateException when called from inside one of this fence's own mutations
     */
    public <T> T call(FencingToken token, Supplier<T> mutation) {
        Objects.requireNonNull(token, "token");
        Objects.requireNonNull(mutation, "mutation");
        checkScope(token);
        if (token.mode() != LockMode.EXCLUSIVE) {
            throw modeMismatch(token);
        }
        if (!mutex.lock()) {
            throw reentered(token);
        }
        try {
            checkAccepted(token);
            T result = mutation.get();
            assert advances(token);
            accepted = token.value();
            return result;
        } finally {
            mutex.unlock();
        }
    }

    /**
     * Checks {@code token} against the accepted one without writing; a fenced read, which a token of either mode
     * may make (a shared token is compared as any token). Inside one of this fence's own
     * mutations it checks against the token accepted before that mutation.
     */
    public void check(FencingToken token) {
        checkScope(token);
        boolean locked = mutex.lock(); // false inside our own mutation, which holds the mutex already
        try {
            checkAccepted(token);
        } finally {
            if (locked) {
                mutex.unlock();
            }
        }
    }

    // The throw sites live in their own methods so that the hot path stays small enough for the JIT to inline.
    private void checkScope(FencingToken token) {
        String lockName = token.lock();
        if (lockName != scope && !lockName.equals(scope)) { // identity first: the common case costs no compare
            throw mismatch(token);
        }
    }

    /** Refuses {@code token} when the policy does not admit it; the caller holds {@link #mutex}. */
    private void checkAccepted(FencingToken token) {
        if (!policy.admits(token.value(), accepted)) {
            throw stale(token);
        }
    }

    private ModeMismatchException modeMismatch(FencingToken token) {
        return new ModeMismatchException(scope, token.value(), token.mode());
    }

    private ScopeMismatchException mismatch(FencingToken token) {
        return new ScopeMismatchException(scope, token);
    }

    private IllegalStateException reentered(FencingToken token) {
        return new IllegalStateException("write with token " + token.value() + " through fence " + scope
                + " from inside that fence's own mutation, on thread " + Thread.currentThread().getName()
                + "; a mutation must not write through its own fence");
    }

    private StaleTokenException stale(FencingToken token) {
        return new StaleTokenException(scope, token.value(), accepted, policy);
    }

    private boolean advances(FencingToken token) {
        if (token.value() < accepted) {
            throw new AssertionError("token " + token.value() + " < accepted " + accepted + " for " + scope);
        }
        return true;
    }

    /**
     * Returns the highest token accepted so far, or {@link FencingToken#NONE}. Inside one of this fence's own
     * mutations it returns the token accepted before that mutation.
     */
    public long accepted() {
        boolean locked = mutex.lock(); // false inside our own mutation, which holds the mutex already
        try {
            return accepted;
        } finally {
            if (locked) {
                mutex.unlock();
            }
        }
    }

    public String scope() {
        return scope;
    }

    public FencePolicy policy() {
        return policy;
    }

    @Override
    public String toString() {
        return "Fence[" + scope + ", " + policy + ", accepted=" + accepted() + "]";
    }

    /**
     * The fence's lock: a mutex that is not reentrant and whose state is the holder's thread id (0 when free; no
     * thread has id 0), so one compare-and-set both takes it and records who holds it. A {@code ReentrantLock} also
     * stores the holding {@code Thread} object on every acquire, and under G1 (the default collector) that reference
     * store can take the collector's card-marking path: it cost the fence about 4 ns of 28 per call in JMH.
     */
    private static final class Mutex extends AbstractQueuedLongSynchronizer {
        @Override
        protected boolean tryAcquire(long threadId) {
            return compareAndSetState(0, threadId);
        }

        @Override
        protected boolean tryRelease(long unused) {
            assert getState() == Thread.currentThread().getId()
                    : "mutex held by thread " + getState() + " released by " + Thread.currentThread().getId();
            setState(0);
            return true;
        }

        /**
         * Takes the mutex, waiting while another thread holds it, and returns true; returns false, taking nothing,
         * when the calling thread holds it already.
         */
        boolean lock() {
            long threadId = Thread.currentThread().getId();
            if (threadId <= 0) { // Thread.getId is not final: an id of 0 would take the mutex and leave it free
                throw badThreadId(threadId);
            }
            if (compareAndSetState(0, threadId)) {
                return true;
            }
            if (getState() == threadId) { // only this thread sets its own id, and it clears it before it releases
                return false;
            }
            acquire(threadId);
            return true;
        }

        void unlock() {
            release(0);
        }

        private static IllegalStateException badThreadId(long threadId) {
            return new IllegalStateException("thread " + Thread.currentThread().getName() + " reports id " + threadId
                    + " from an overridden Thread.getId(); a Fence tells its holder by a positive thread id");
        }
    }
}
