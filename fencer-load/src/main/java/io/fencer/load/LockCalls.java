package io.fencer.load;

import io.fencer.client.FencedLock;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.Session;
import java.time.Duration;

/**
 * The calls of a lock bench, over one transport: the Java client on the gRPC port ({@link #of(FencerClient)}), or
 * plain HTTP on the HTTP port ({@link HttpLockCalls}), so that both run the very same cycles and checks.
 */
public interface LockCalls {
    /** Opens a session kept alive with {@code ttl} until it is closed. */
    BenchSession openSession(Duration ttl);

    /** What a cycle does while it holds a grant. */
    @FunctionalInterface
    interface Holding {
        /** Called while {@code grantedLock} is held under the token {@code tokenValue}. */
        void held(String grantedLock, long tokenValue);
    }

    /** One session of the bench. */
    interface BenchSession extends AutoCloseable {
        /**
         * Acquires {@code lock} as {@code mode} says (exclusively, shared, or a permit of the semaphore of that
         * name with {@code permits} permits), waiting at most {@code wait}, hands the granted lock's name (a
         * semaphore's slot) and the token value to {@code holding} while holding it, and releases it.
         *
         * @throws io.fencer.core.SessionExpiredException when the session ended: open another
         * @throws IllegalArgumentException when this transport does not serve {@code mode}
         * @throws RuntimeException any other failure of the cycle
         */
        void cycle(String lock, Duration wait, LockBench.Mode mode, int permits, Holding holding);

        /** Closes the session; quietly, since its lease ends on the service anyway. */
        @Override
        void close();
    }

    /** Returns the calls of the Java client {@code fencer}. */
    static LockCalls of(FencerClient fencer) {
        return ttl -> new ClientSession(fencer.openSession(ttl));
    }

    /** A client session, with the handle of the one lock its bench client cycles on. */
    final class ClientSession implements BenchSession {
        private final Session session;
        private FencedLock lock;

        ClientSession(Session session) {
            this.session = session;
        }

        @Override
        public void cycle(String name, Duration wait, LockBench.Mode mode, int permits, Holding holding) {
            if (lock == null || !lock.name().equals(name)) {
                lock = session.lock(name);
            }
            try (Grant grant = acquire(name, wait, mode, permits)) {
                holding.held(grant.token().lock(), grant.token().value());
            }
        }

        private Grant acquire(String name, Duration wait, LockBench.Mode mode, int permits) {
            return switch (mode) {
                case EXCLUSIVE -> lock.acquire(wait);
                case SHARED -> lock.acquireShared(wait);
                case SEMAPHORE -> session.semaphore(name, permits).acquire(wait);
            };
        }

        @Override
        public void close() {
            try {
                session.close();
            } catch (RuntimeException e) {
                // the session ends on the service anyway when its lease runs out
            }
        }
    }
}
