package io.fencer.server.rpc;

import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.Reason;
import io.fencer.core.BadTokenSignatureException;
import io.fencer.core.FencerException;
import io.fencer.core.InternalException;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LimitExceededException;
import io.fencer.core.NotHolderException;
import io.fencer.core.NotLeaderException;
import io.fencer.core.ScopeMismatchException;
import io.fencer.core.SessionExpiredException;
import io.fencer.core.StaleTokenException;
import io.fencer.core.TokenExhaustedException;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The server's half of Fencer's error catalogue: each {@link FencerException} becomes one gRPC status and one
 * {@link ErrorDetail} in the trailer {@code fencer-error-bin}, exactly as the table in {@code errors.proto} says.
 */
public final class ErrorCatalogue {
    private static final Logger LOG = LoggerFactory.getLogger(ErrorCatalogue.class);
    /** The trailer that carries the serialized {@link ErrorDetail}. */
    static final Metadata.Key<byte[]> ERROR_DETAIL_KEY =
            Metadata.Key.of("fencer-error-bin", Metadata.BINARY_BYTE_MARSHALLER);

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
        ErrorDetail detail = detail(error);
        Metadata trailers = new Metadata();
        trailers.put(ERROR_DETAIL_KEY, detail.toByteArray());
        return status(error).withDescription(error.getMessage()).asRuntimeException(trailers);
    }

    /** Returns the gRPC status of an error's reason, per the catalogue. */
    static Status status(FencerException error) {
        return switch (error.reason()) {
            case INVALID_ARGUMENT -> Status.INVALID_ARGUMENT;
            case LIMIT_EXCEEDED -> Status.RESOURCE_EXHAUSTED;
            case SESSION_EXPIRED, NOT_HOLDER, STALE_TOKEN, SCOPE_MISMATCH, TOKEN_EXHAUSTED ->
                    Status.FAILED_PRECONDITION;
            case BAD_TOKEN_SIGNATURE -> Status.UNAUTHENTICATED;
            case NOT_LEADER, UNAVAILABLE -> Status.UNAVAILABLE;
            case INTERNAL -> Status.INTERNAL;
        };
    }

    static ErrorDetail detail(FencerException error) {
        ErrorDetail.Builder detail = ErrorDetail.newBuilder()
                .setReason(Reason.valueOf("REASON_" + error.reason().name()))
                .setMessage(String.valueOf(error.getMessage()));
        if (error instanceof InvalidArgumentException invalid) {
            detail.setField(invalid.field()).setValue(invalid.value());
        } else if (error instanceof LimitExceededException limit) {
            detail.setLimit(limit.limit()).setLimitValue(limit.limitValue());
        } else if (error instanceof SessionExpiredException expired) {
            detail.setSessionId(expired.sessionId());
        } else if (error instanceof NotHolderException notHolder) {
            detail.setLock(notHolder.lock()).setPresentedToken(notHolder.presented())
                    .setCurrentToken(notHolder.current());
        } else if (error instanceof StaleTokenException stale) {
            detail.setLock(stale.scope()).setPresentedToken(stale.presented()).setCurrentToken(stale.accepted());
        } else if (error instanceof ScopeMismatchException mismatch) {
            detail.setLock(mismatch.scope()).setValue(mismatch.tokenLock());
        } else if (error instanceof BadTokenSignatureException badSignature) {
            detail.setLock(badSignature.lock()).setPresentedToken(badSignature.value());
        } else if (error instanceof TokenExhaustedException exhausted) {
            detail.setLock(exhausted.lock());
        } else if (error instanceof NotLeaderException notLeader) {
            detail.setLeaderAddress(notLeader.leaderAddress());
        }
        return detail.build();
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
