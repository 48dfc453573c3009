package io.fencer.client.internal;

import static java.util.concurrent.TimeUnit.NANOSECONDS;

import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.UnknownHostException;
import java.nio.channels.UnresolvedAddressException;
import java.util.Locale;
import java.util.Optional;

/**
 * Tells a failure that reached no server at all (connection refused, no route, unknown host) from one a server
 * answered or that was cut short: only the first kind means nothing runs at the address, so only it may end a call
 * before its budget when no endpoint has ever answered. A deadline that passed while a call still waited for a
 * connection ({@link #noConnectionWithin}) reached no server either: nothing was sent, though something may run at
 * the address.
 */
final class Unreachable {
    /** The deepest cause chain looked through; gRPC wraps a transport's error two or three levels down. */
    private static final int CAUSES_MAX = 8;

    private Unreachable() {}

    /** Returns true when {@code failure} is UNAVAILABLE because no connection could be made to the endpoint. */
    static boolean is(Throwable failure) {
        return why(failure).isPresent();
    }

    /**
     * Returns the failure of a call whose deadline passed before any connection carried it, having cancelled it:
     * DEADLINE_EXCEEDED, as for any attempt the deadline cuts short, but known never to have been sent.
     */
    static StatusRuntimeException noConnectionWithin(long timeoutNanos) {
        return Status.DEADLINE_EXCEEDED.withDescription("no connection to the peer within "
                + NANOSECONDS.toMillis(timeoutNanos) + " ms (enforced by the client)")
                .withCause(new NoConnection()).asRuntimeException();
    }

    /**
     * Returns true when {@code failure} reached no server: no connection could be made ({@link #is}), or none was
     * made before the call's deadline ({@link #noConnectionWithin}).
     */
    static boolean neverSent(Throwable failure) {
        return is(failure) || (Status.fromThrowable(failure).getCode() == Status.Code.DEADLINE_EXCEEDED
                && failure.getCause() instanceof NoConnection);
    }

    /** Returns why no connection was made ("connection refused", "unknown host x"), or empty for other failures. */
    static Optional<String> why(Throwable failure) {
        Status status = Status.fromThrowable(failure);
        if (status.getCode() != Status.Code.UNAVAILABLE) {
            return Optional.empty();
        }
        Throwable cause = failure;
        for (int depth = 0; cause != null && depth < CAUSES_MAX; depth++) {
            if (cause instanceof UnknownHostException || cause instanceof UnresolvedAddressException) {
                return Optional.of("unknown host");
            }
            if (cause instanceof ConnectException || cause instanceof NoRouteToHostException) {
                return Optional.of(connectError(cause.getMessage()));
            }
            cause = cause.getCause();
        }
        String description = status.getDescription();
        if (description != null && description.startsWith("Unable to resolve host")) {
            return Optional.of("unknown host");
        }
        return Optional.empty();
    }

    /** Names a connect error in words: Netty's native transport reports the errno ("error(-111)"), not its name. */
    static String connectError(String message) {
        String text = message == null ? "" : message.toLowerCase(Locale.ROOT);
        if (text.contains("refused") || text.contains("error(-111)")) {
            return "connection refused";
        }
        if (text.contains("no route") || text.contains("error(-113)")) {
            return "no route to host";
        }
        if (text.contains("unreachable") || text.contains("error(-101)")) {
            return "network unreachable";
        }
        if (text.contains("timed out")) {
            return "connection timed out";
        }
        return text.isEmpty() ? "connection failed" : text;
    }

    /** Marks a deadline that passed while the call waited for a connection; it has no stack worth keeping. */
    private static final class NoConnection extends Exception {
        private static final long serialVersionUID = 1L;

        NoConnection() {
            super("the call was never sent: no connection was made in time", null, false, false);
        }
    }
}
