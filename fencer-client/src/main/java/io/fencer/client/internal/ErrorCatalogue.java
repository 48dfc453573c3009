package io.fencer.client.internal;

import com.google.protobuf.InvalidProtocolBufferException;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.Reason;
import io.fencer.core.BadTokenSignatureException;
import io.fencer.core.FencePolicy;
import io.fencer.core.FencerException;
import io.fencer.core.FencingToken;
import io.fencer.core.InternalException;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LimitExceededException;
import io.fencer.core.NotHolderException;
import io.fencer.core.NotLeaderException;
import io.fencer.core.ScopeMismatchException;
import io.fencer.core.SessionExpiredException;
import io.fencer.core.StaleTokenException;
import io.fencer.core.TokenExhaustedException;
import io.fencer.core.UnavailableException;
import io.grpc.Metadata;
import io.grpc.Status;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The client half of Fencer's error catalogue: turns a failed gRPC call (status plus the {@link ErrorDetail} in
 * the trailer {@code fencer-error-bin}) into the one {@link FencerException} type of its reason, as the table in
 * {@code errors.proto} pairs them.
 *
 * <p>A call without a detail (the transport failed, or something other than Fencer answered) is mapped by its
 * status alone: UNAVAILABLE, DEADLINE_EXCEEDED, CANCELLED and ABORTED become {@link UnavailableException} (the
 * call may or may not have taken effect), every other status {@link InternalException}.
 */
public final class ErrorCatalogue {
    /** The trailer that carries a serialized {@link ErrorDetail}. */
    public static final Metadata.Key<byte[]> DETAIL_KEY =
            Metadata.Key.of("fencer-error-bin", Metadata.BINARY_BYTE_MARSHALLER);

    /**
     * The token a core exception's sentence begins with ({@code token orders#32 ...}): the server's detail does
     * not always carry it (scope mismatch, bad signature), so it is read from the sentence core formatted.
     */
    private static final Pattern SENTENCE_TOKEN = Pattern.compile("^token (.+?)#(\\d{1,19}) ");
    private static final String SIGNATURE_REFUSED = " refused: ";

    private ErrorCatalogue() {}

    /** Returns the error detail a failed call carries in its trailers, if any and if it parses. */
    public static Optional<ErrorDetail> detail(Throwable failure) {
        Metadata trailers = Status.trailersFromThrowable(failure);
        if (trailers == null) {
            return Optional.empty();
        }
        byte[] bytes = trailers.get(DETAIL_KEY);
        if (bytes == null) {
            return Optional.empty();
        }
        try {
            return Optional.of(ErrorDetail.parseFrom(bytes));
        } catch (InvalidProtocolBufferException e) {
            return Optional.empty(); // an unparsable detail is no detail: map by status
        }
    }

    /** Returns true when the failure is a Fencer error of {@code reason}. */
    static boolean hasReason(Throwable failure, Reason reason) {
        return detail(failure).map(d -> d.getReason() == reason).orElse(false);
    }

    /**
     * Maps a failed call to the exception of its reason; the exception's cause is {@code failure}.
     *
     * @param failure a {@link io.grpc.StatusRuntimeException} or {@link io.grpc.StatusException} (any other
     *     throwable is mapped as status UNKNOWN, i.e. {@link InternalException})
     */
    public static FencerException toException(Throwable failure) {
        Status status = Status.fromThrowable(failure);
        Optional<ErrorDetail> detail = detail(failure);
        FencerException mapped = detail.map(d -> byReason(status, d)).orElseGet(() -> byStatus(status, failure));
        if (mapped.getCause() == null) {
            mapped.initCause(failure);
        }
        return mapped;
    }

    private static FencerException byReason(Status status, ErrorDetail detail) {
        String message = message(status, detail);
        switch (detail.getReason()) {
            case REASON_INVALID_ARGUMENT:
                return new InvalidArgumentException(detail.getField(), detail.getValue(), message);
            case REASON_LIMIT_EXCEEDED:
                return new LimitExceededException(detail.getLimit(), detail.getLimitValue(), message);
            case REASON_SESSION_EXPIRED:
                return new SessionExpiredException(detail.getSessionId(), message);
            case REASON_NOT_HOLDER:
                return new NotHolderException(detail.getLock(), detail.getPresentedToken(), detail.getCurrentToken());
            case REASON_STALE_TOKEN:
                FencePolicy policy = message.contains("policy " + FencePolicy.STRICT) ? FencePolicy.STRICT
                        : FencePolicy.AT_LEAST;
                return new StaleTokenException(detail.getLock(), detail.getPresentedToken(), detail.getCurrentToken(),
                        policy);
            case REASON_SCOPE_MISMATCH:
                return scopeMismatch(detail, message);
            case REASON_TOKEN_EXHAUSTED:
                // Exhausted means the counter reached the maximum, whether or not the detail says which value.
                return new TokenExhaustedException(detail.getLock(), detail.getCurrentToken() == FencingToken.NONE
                        ? FencingToken.VALUE_MAX : detail.getCurrentToken());
            case REASON_BAD_TOKEN_SIGNATURE:
                return badSignature(detail, message);
            case REASON_NOT_LEADER:
                return new NotLeaderException(detail.getLeaderAddress());
            case REASON_UNAVAILABLE:
                return new UnavailableException(message);
            case REASON_INTERNAL:
                return new InternalException(message);
            default:
                return byStatus(status, null);
        }
    }

    private static FencerException scopeMismatch(ErrorDetail detail, String message) {
        FencingToken token = sentenceToken(message);
        if (token == null) {
            // Neither detail nor sentence names the token: keep the server's sentence rather than invent one.
            return new InternalException("scope mismatch without a token named: " + message);
        }
        return new ScopeMismatchException(detail.getLock(), token);
    }

    private static FencerException badSignature(ErrorDetail detail, String message) {
        FencingToken token = sentenceToken(message);
        String lock = !detail.getLock().isEmpty() ? detail.getLock() : token == null ? "" : token.lock();
        long value = detail.getPresentedToken() != 0 ? detail.getPresentedToken() : token == null ? 0 : token.value();
        int refused = message.indexOf(SIGNATURE_REFUSED);
        String why = token != null && refused >= 0 ? message.substring(refused + SIGNATURE_REFUSED.length()) : message;
        return new BadTokenSignatureException(lock, value, why);
    }

    /** Returns the token a core exception's sentence starts with, or null. */
    private static FencingToken sentenceToken(String message) {
        Matcher matcher = SENTENCE_TOKEN.matcher(message);
        if (!matcher.find()) {
            return null;
        }
        try {
            return new FencingToken(matcher.group(1), Long.parseLong(matcher.group(2)));
        } catch (InvalidArgumentException | NumberFormatException e) {
            return null;
        }
    }

    private static FencerException byStatus(Status status, Throwable failure) {
        String message = status.getCode() + (status.getDescription() == null ? "" : ": " + status.getDescription());
        switch (status.getCode()) {
            case UNAVAILABLE:
            case DEADLINE_EXCEEDED:
            case CANCELLED:
            case ABORTED:
                return failure == null ? new UnavailableException(message) : new UnavailableException(message, failure);
            default:
                return new InternalException(message);
        }
    }

    private static String message(Status status, ErrorDetail detail) {
        if (!detail.getMessage().isEmpty()) {
            return detail.getMessage();
        }
        if (status.getDescription() != null && !status.getDescription().isEmpty()) {
            return status.getDescription();
        }
        return status.getCode() + " (" + detail.getReason() + ")";
    }
}
