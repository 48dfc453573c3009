package io.fencer.core;

import io.fencer.core.internal.ErrorFields;
/**
 * The reasons in Fencer's error catalogue, one per exception type; they mirror {@code fencer.v1.Reason} on the
 * wire, where each is paired with one gRPC status. {@link ErrorFields} knows each reason's type and fields.
 */
public enum ErrorReason {
    INVALID_ARGUMENT,
    LIMIT_EXCEEDED,
    SESSION_EXPIRED,
    SESSION_UNAUTHENTICATED,
    NOT_HOLDER,
    STALE_TOKEN,
    SCOPE_MISMATCH,
    TOKEN_EXHAUSTED,
    IDEMPOTENCY_MISMATCH,
    BAD_TOKEN_SIGNATURE,
    PERMISSION_DENIED,
    NOT_LEADER,
    UNAVAILABLE,
    INTERNAL,
    /** A write under a shared-mode token ({@link ModeMismatchException}). */
    MODE_MISMATCH,
    OUT_OF_RANGE,
    /** A change of the group's membership was refused ({@link MembershipRefusedException}). */
    MEMBERSHIP_REFUSED
}
