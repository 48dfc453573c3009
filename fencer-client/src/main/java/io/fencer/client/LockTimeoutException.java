package io.fencer.client;

import java.time.Duration;

/** An acquire waited its whole wait without being granted; the wait was cancelled and nothing is held. */
public final class LockTimeoutException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final String lock;

    public LockTimeoutException(String lock, Duration wait) {
        super("lock '" + lock + "' was not granted within " + wait.toMillis() + " ms");
        this.lock = lock;
    }

    public String lock() {
        return lock;
    }
}
