package io.fencer.api.errors;

import com.google.protobuf.InvalidProtocolBufferException;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.Policy;
import io.fencer.api.v1.Reason;
import io.fencer.core.ErrorFields;
import io.fencer.core.ErrorReason;
import io.fencer.core.FencePolicy;
import io.fencer.core.FencerException;
import io.fencer.core.InternalException;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.UnavailableException;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.util.Collections;
import java.util.EnumMap;
import java.util.Map;
import java.util.Optional;

/**
 * Fencer's error catalogue on the wire, both ways: a {@link FencerException} becomes the gRPC status of its
 * reason plus an {@link ErrorDetail} in the trailer {@code fencer-error-bin} ({@link #toStatusException}), and a
 * failed call becomes the one exception type of its reason again ({@link #toException}), as the table in
 * {@code errors.proto} pairs them. The server and the client both use this class, so they cannot disagree.
 *
 * <p>The detail carries every field of the exception: {@link ErrorFields} takes it apart and builds it again, and
 * this class copies those fields to the detail's fields of the same names and back.
 *
 * <p>A call without a detail (the transport failed, or something other than Fencer answered) is mapped by its
 * status alone: UNAVAILABLE, DEADLINE_EXCEEDED, CANCELLED and ABORTED become {@link UnavailableException} (the
 * call may or may not have taken effect), every other status {@link InternalException}.
 */
public final class WireErrors {
    /** The trailer that carries a serialized {@link ErrorDetail}. */
    public static final Metadata.Key<byte[]> DETAIL_KEY =
            Metadata.Key.of("fencer-error-bin", Metadata.BINARY_BYTE_MARSHALLER);

    private static final Map<ErrorReason, Reason> WIRE_REASONS = wireReasons();
    private static final Map<Reason, ErrorReason> REASONS = reasons();

    private WireErrors() {}

    /** Returns the gRPC status of a reason, per the catalogue in {@code errors.proto}. */
    public static Status status(ErrorReason reason) {
        return switch (reason) {
            case INVALID_ARGUMENT -> Status.INVALID_ARGUMENT;
            case LIMIT_EXCEEDED -> Status.RESOURCE_EXHAUSTED;
            case SESSION_EXPIRED, NOT_HOLDER, STALE_TOKEN, SCOPE_MISMATCH, TOKEN_EXHAUSTED ->
                    Status.FAILED_PRECONDITION;
            case SESSION_UNAUTHENTICATED, BAD_TOKEN_SIGNATURE -> Status.UNAUTHENTICATED;
            case NOT_LEADER, UNAVAILABLE -> Status.UNAVAILABLE;
            case INTERNAL -> Status.INTERNAL;
        };
    }

    /** Returns the wire reason of {@code reason}: {@code REASON_} and its name. */
    public static Reason wireReason(ErrorReason reason) {
        return WIRE_REASONS.get(reason);
    }

    /** Returns the reason of a wire reason; empty for {@code REASON_UNSPECIFIED} and for reasons unknown here. */
    public static Optional<ErrorReason> reason(Reason wireReason) {
        return Optional.ofNullable(REASONS.get(wireReason));
    }

    /** Returns the status exception of an error: its reason's status, its sentence, and its detail. */
    public static StatusRuntimeException toStatusException(FencerException error) {
        return status(error.reason()).withDescription(error.getMessage()).asRuntimeException(trailers(toDetail(error)));
    }

    /** Returns trailers holding {@code detail} under {@link #DETAIL_KEY}. */
    public static Metadata trailers(ErrorDetail detail) {
        Metadata trailers = new Metadata();
        trailers.put(DETAIL_KEY, detail.toByteArray());
        return trailers;
    }

    /** Returns the detail of an error: its reason and every one of its fields. */
    public static ErrorDetail toDetail(FencerException error) {
        ErrorFields fields = ErrorFields.of(error);
        return ErrorDetail.newBuilder()
                .setReason(wireReason(fields.reason()))
                .setMessage(String.valueOf(fields.message()))
                .setField(text(fields.field()))
                .setValue(text(fields.value()))
                .setLimit(text(fields.limit()))
                .setLimitValue(fields.limitValue())
                .setSessionId(fields.sessionId())
                .setLock(text(fields.lock()))
                .setPresentedToken(fields.presentedToken())
                .setCurrentToken(fields.currentToken())
                .setLeaderAddress(text(fields.leaderAddress()))
                .setPolicy(wirePolicy(fields.policy()))
                .setWhy(text(fields.why()))
                .build();
    }

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

    /**
     * Maps a failed call to the exception of its reason; the exception's cause is {@code failure}.
     *
     * @param failure a {@link StatusRuntimeException} or {@link io.grpc.StatusException} (any other throwable
     *     is mapped as status UNKNOWN, i.e. {@link InternalException})
     */
    public static FencerException toException(Throwable failure) {
        Status status = Status.fromThrowable(failure);
        FencerException mapped = detail(failure).flatMap(detail -> byReason(status, detail))
                .orElseGet(() -> byStatus(status));
        if (mapped.getCause() == null) {
            mapped.initCause(failure);
        }
        return mapped;
    }

    private static Optional<FencerException> byReason(Status status, ErrorDetail detail) {
        Optional<ErrorReason> reason = reason(detail.getReason());
        if (reason.isEmpty()) {
            return Optional.empty(); // a reason from a newer server, or none: map by status
        }
        String message = message(status, detail);
        ErrorFields fields = OlderServers.complete(fields(reason.get(), message, detail));
        try {
            return Optional.of(fields.toException());
        } catch (InvalidArgumentException e) {
            // The fields cannot form their exception (a scope mismatch naming no valid token): keep the sentence.
            return Optional.of(new InternalException("undecodable " + reason.get() + " detail (" + e.getMessage()
                    + "): " + message));
        }
    }

    /** Returns the fields a detail carries, as they are: what an older server left out stays empty. */
    static ErrorFields fields(ErrorReason reason, String message, ErrorDetail detail) {
        return new ErrorFields(reason, message, detail.getField(), detail.getValue(), detail.getLimit(),
                detail.getLimitValue(), detail.getSessionId(), detail.getLock(), detail.getPresentedToken(),
                detail.getCurrentToken(), detail.getLeaderAddress(), policy(detail.getPolicy()), detail.getWhy());
    }

    private static FencerException byStatus(Status status) {
        String message = status.getCode() + (status.getDescription() == null ? "" : ": " + status.getDescription());
        return switch (status.getCode()) {
            case UNAVAILABLE, DEADLINE_EXCEEDED, CANCELLED, ABORTED -> new UnavailableException(message);
            default -> new InternalException(message);
        };
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

    private static Policy wirePolicy(FencePolicy policy) {
        if (policy == null) {
            return Policy.POLICY_UNSPECIFIED;
        }
        return switch (policy) {
            case AT_LEAST -> Policy.POLICY_AT_LEAST;
            case STRICT -> Policy.POLICY_STRICT;
        };
    }

    /** Returns the policy of a detail, or null when it names none (no STALE_TOKEN, or an older server). */
    private static FencePolicy policy(Policy policy) {
        return switch (policy) {
            case POLICY_AT_LEAST -> FencePolicy.AT_LEAST;
            case POLICY_STRICT -> FencePolicy.STRICT;
            case POLICY_UNSPECIFIED, UNRECOGNIZED -> null;
        };
    }

    /** Returns {@code text}, or empty for null: protobuf strings have no null. */
    private static String text(String text) {
        return text == null ? "" : text;
    }

    private static Map<ErrorReason, Reason> wireReasons() {
        Map<ErrorReason, Reason> reasons = new EnumMap<>(ErrorReason.class);
        for (ErrorReason reason : ErrorReason.values()) {
            // Fails the class's initialization when errors.proto lacks a reason core has.
            reasons.put(reason, Reason.valueOf("REASON_" + reason.name()));
        }
        return Collections.unmodifiableMap(reasons);
    }

    private static Map<Reason, ErrorReason> reasons() {
        Map<Reason, ErrorReason> reasons = new EnumMap<>(Reason.class);
        WIRE_REASONS.forEach((reason, wireReason) -> reasons.put(wireReason, reason));
        return Collections.unmodifiableMap(reasons);
    }
}
