package io.fencer.api.errors;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import io.fencer.api.v1.CallError;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.Policy;
import io.fencer.api.v1.Reason;
import io.fencer.core.internal.ErrorFields;
import io.fencer.core.ErrorReason;
import io.fencer.core.FencePolicy;
import io.fencer.core.FencerException;
import io.fencer.core.InternalException;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.UnavailableException;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.StatusProto;
import java.util.Collections;
import java.util.EnumMap;
import java.util.Map;
import java.util.Optional;

/**
 * Fencer's error catalogue on the wire, both ways: a {@link FencerException} becomes the gRPC status of its
 * reason plus an {@link ErrorDetail} ({@link #toStatusException}), and a failed call becomes the one exception
 * type of its reason again ({@link #toException}), as the table in {@code errors.proto} pairs them. The server and
 * the client both use this class, so they cannot disagree.
 *
 * <p>The detail travels in gRPC's standard rich error model, so that every gRPC library finds it: the trailer
 * {@code grpc-status-details-bin} holds a {@code google.rpc.Status} with the call's code and description and the
 * detail packed as an {@link Any} ({@link #richStatus}). For one release the detail also travels bare in the
 * deprecated trailer {@code fencer-error-bin} ({@link #DETAIL_KEY}) for older clients; reading prefers the
 * standard trailer and falls back to the old one, which is all servers of the previous release send. A pipelined
 * call's {@link CallError} carries the same {@code google.rpc.Status} ({@link #toCallError}).
 *
 * <p>The detail carries every field of the exception: {@link ErrorFields} takes it apart and builds it again, and
 * this class copies those fields to the detail's fields of the same names and back.
 *
 * <p>A call without a detail (the transport failed, or something other than Fencer answered) is mapped by its
 * status alone: UNAVAILABLE, DEADLINE_EXCEEDED, CANCELLED and ABORTED become {@link UnavailableException} (the
 * call may or may not have taken effect), every other status {@link InternalException}.
 */
public final class WireErrors {
    /**
     * The deprecated trailer that carries a bare serialized {@link ErrorDetail}, beside the standard
     * {@code grpc-status-details-bin}: written for clients of the previous release, read only when the standard
     * trailer has no detail (a server of the previous release). It will be dropped in the next release.
     *
     * @deprecated read the detail from {@code grpc-status-details-bin} ({@link #detail}, or grpc's own
     *     {@link StatusProto#fromThrowable}); this trailer will be dropped in the next release
     */
    @Deprecated
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
            case IDEMPOTENCY_MISMATCH, MODE_MISMATCH, MEMBERSHIP_REFUSED -> Status.FAILED_PRECONDITION;
            case SESSION_UNAUTHENTICATED, BAD_TOKEN_SIGNATURE -> Status.UNAUTHENTICATED;
            case PERMISSION_DENIED -> Status.PERMISSION_DENIED;
            case NOT_LEADER, UNAVAILABLE -> Status.UNAVAILABLE;
            case INTERNAL -> Status.INTERNAL;
            case OUT_OF_RANGE -> Status.OUT_OF_RANGE;
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
        return toStatusException(status(error.reason()).withDescription(error.getMessage()), toDetail(error));
    }

    /**
     * Returns the failure a Fencer server answers with: {@code status}'s code and description, and
     * {@code detail} in both trailers, the standard {@code grpc-status-details-bin} and the deprecated
     * {@link #DETAIL_KEY}. The detail's message, when it is the description, travels only as the description
     * ({@link #richStatus}); {@link #detail} puts it back.
     */
    public static StatusRuntimeException toStatusException(Status status, ErrorDetail detail) {
        ErrorDetail sent = withoutDescription(status, detail);
        // StatusProto takes the gRPC status's code and description from the google.rpc.Status: they cannot differ.
        return StatusProto.toStatusRuntimeException(richStatus(status, sent), trailers(sent));
    }

    /**
     * Returns {@code status} in gRPC's standard rich error model: its code, its description as the message, and
     * {@code detail} packed as the one {@link Any} of its details (type URL
     * {@code type.googleapis.com/fencer.v1.ErrorDetail}), without the detail's message when that is the
     * description.
     *
     * <p>Why the sentence travels once: the description is sent as {@code grpc-message} too, and a refusal
     * naming a long value (300 characters of 3-byte UTF-8) carried four times over, across three headers, would
     * pass the 8 KiB of metadata gRPC clients accept by default; the call would then fail as a transport error.
     */
    public static com.google.rpc.Status richStatus(Status status, ErrorDetail detail) {
        return com.google.rpc.Status.newBuilder()
                .setCode(status.getCode().value())
                .setMessage(text(status.getDescription()))
                .addDetails(Any.pack(withoutDescription(status, detail)))
                .build();
    }

    /** Returns {@code detail} without its message when that is the status's description, which carries it. */
    private static ErrorDetail withoutDescription(Status status, ErrorDetail detail) {
        return detail.getMessage().equals(status.getDescription()) ? detail.toBuilder().clearMessage().build()
                : detail;
    }

    /**
     * Returns trailers holding {@code detail} bare under the deprecated {@link #DETAIL_KEY} only: what a server
     * of the previous release sent. {@link #toStatusException(Status, ErrorDetail)} sends both trailers.
     *
     * @deprecated send failures made by {@link #toStatusException(Status, ErrorDetail)}; only tests that act as
     *     a server of the previous release need this, until the trailer is dropped in the next release
     */
    @Deprecated
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
                .setIdentity(text(fields.identity()))
                .setPermission(text(fields.permission()))
                .setOldestRevision(fields.oldestRevision())
                .build();
    }

    /**
     * Returns the error detail a failed call carries, if any and if it parses: from the standard
     * {@code grpc-status-details-bin} trailer, else from the deprecated {@link #DETAIL_KEY}. A detail sent
     * without its message (the description carries it) is returned with the description as its message.
     */
    public static Optional<ErrorDetail> detail(Throwable failure) {
        Metadata trailers = Status.trailersFromThrowable(failure);
        if (trailers == null) {
            return Optional.empty();
        }
        String description = Status.fromThrowable(failure).getDescription();
        return standardDetail(failure).or(() -> legacyDetail(trailers))
                .map(detail -> detail.getMessage().isEmpty() && description != null
                        ? detail.toBuilder().setMessage(description).build() : detail);
    }

    /** Returns the detail packed in the call's {@code google.rpc.Status}, if it has one. */
    private static Optional<ErrorDetail> standardDetail(Throwable failure) {
        return standardStatus(failure).flatMap(WireErrors::packedDetail);
    }

    /**
     * Returns the call's {@code google.rpc.Status}: from {@code grpc-status-details-bin} if it has a valid one,
     * else (as grpc-java builds it) its code and description without details.
     */
    private static Optional<com.google.rpc.Status> standardStatus(Throwable failure) {
        try {
            return Optional.ofNullable(StatusProto.fromThrowable(failure));
        } catch (IllegalArgumentException e) {
            // The trailer does not parse, or names another code than the call's status: it is not Fencer's.
            return Optional.empty();
        }
    }

    private static Optional<ErrorDetail> packedDetail(com.google.rpc.Status richStatus) {
        for (Any packed : richStatus.getDetailsList()) {
            if (packed.is(ErrorDetail.class)) {
                try {
                    return Optional.of(packed.unpack(ErrorDetail.class));
                } catch (InvalidProtocolBufferException e) {
                    return Optional.empty(); // an unparsable detail is no detail: map by status
                }
            }
        }
        return Optional.empty();
    }

    private static Optional<ErrorDetail> legacyDetail(Metadata trailers) {
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
     * Returns a pipelined call's failure as its unary form would have ended: the {@code google.rpc.Status} of
     * {@code failure} (a {@link StatusRuntimeException} from {@link #toStatusException}, or any other status
     * failure), and, for clients of the previous release, the deprecated code, description and detail fields.
     */
    @SuppressWarnings("deprecation") // writes the deprecated fields on purpose, for one more release
    public static CallError toCallError(StatusRuntimeException failure) {
        Status status = failure.getStatus();
        Optional<ErrorDetail> detail = detail(failure);
        // A failure from this catalogue has its google.rpc.Status already; any other gets one of that shape.
        com.google.rpc.Status richStatus = standardStatus(failure)
                .filter(standard -> packedDetail(standard).isPresent())
                .orElseGet(() -> detail
                .map(found -> richStatus(status, found))
                .orElseGet(() -> com.google.rpc.Status.newBuilder().setCode(status.getCode().value())
                        .setMessage(text(status.getDescription())).build()));
        CallError.Builder callError = CallError.newBuilder()
                .setStatus(richStatus)
                .setStatusCode(status.getCode().value())
                .setDescription(text(status.getDescription()));
        detail.ifPresent(callError::setDetail);
        return callError.build();
    }

    /**
     * Returns the failure a pipelined call's {@link CallError} stands for, as its unary form would have thrown
     * it: from {@code status}, else (a server of the previous release) from the deprecated fields. A code that
     * gRPC does not know is UNKNOWN, as gRPC maps it on a unary call.
     */
    @SuppressWarnings("deprecation") // reads the deprecated fields only when the standard one is absent
    public static StatusRuntimeException toStatusException(CallError error) {
        if (error.hasStatus()) {
            com.google.rpc.Status richStatus = error.getStatus();
            if (Status.fromCodeValue(richStatus.getCode()).getCode().value() != richStatus.getCode()) {
                richStatus = richStatus.toBuilder().setCode(Status.Code.UNKNOWN.value())
                        .setMessage("unknown status code " + richStatus.getCode() + ": " + richStatus.getMessage())
                        .build();
            }
            return StatusProto.toStatusRuntimeException(richStatus);
        }
        Status status = Status.fromCodeValue(error.getStatusCode());
        if (!error.getDescription().isEmpty()) {
            status = status.withDescription(error.getDescription());
        }
        return status.asRuntimeException(error.hasDetail() ? trailers(error.getDetail()) : new Metadata());
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
                detail.getCurrentToken(), detail.getLeaderAddress(), policy(detail.getPolicy()), detail.getWhy(),
                detail.getIdentity(), detail.getPermission(), detail.getOldestRevision());
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
