package io.fencer.server.rpc;

import io.fencer.api.errors.WireErrors;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.core.FencerException;
import io.fencer.core.InternalException;
import io.grpc.StatusRuntimeException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The server's half of Fencer's error catalogue: each {@link FencerException} becomes one gRPC status and one
 * {@link ErrorDetail}, packed in the standard {@code grpc-status-details-bin} trailer (and, for one release, bare in
 * {@code fencer-error-bin}), by {@link WireErrors}, the catalogue the client reads back with. What is the server's
 * own: unwrapping a future's failure, and reporting any other throwable (a bug) as INTERNAL.
 */
public final class ErrorCatalogue {
    private static final Logger LOG = LoggerFactory.getLogger(ErrorCatalogue.class);

    private ErrorCatalogue() {}

    /** Returns the status exception for any failure: typed errors by the table, anything else as INTERNAL. */
    public static StatusRuntimeException toStatusException(Throwable failure) {
        Throwable cause = unwrap(failure);
        if (cause instanceof StatusRuntimeException statusException) {
            return statusException; // already mapped
        }
        if (cause instanceof FencerException fencerException) {
            return toStatusException(fencerException);
        }
        LOG.error("unexpected failure while serving a call", cause);
        return toStatusException(new InternalException("unexpected " + cause.getClass().getSimpleName() + ": "
                + cause.getMessage()));
    }

    static StatusRuntimeException toStatusException(FencerException error) {
        return WireErrors.toStatusException(error);
    }

    public static Throwable unwrap(Throwable failure) {
        Throwable cause = failure;
        while ((cause instanceof CompletionException || cause instanceof ExecutionException)
                && cause.getCause() != null) {
            cause = cause.getCause();
        }
        return cause;
    }
}
