package io.fencer.api.errors;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.Reason;
import io.fencer.core.BadTokenSignatureException;
import io.fencer.core.ErrorReason;
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
import io.grpc.StatusRuntimeException;
import java.util.Arrays;
import org.junit.jupiter.api.Test;

@SuppressWarnings("deprecation") // acts as a server of the previous release, which sent fencer-error-bin alone
class WireErrorsTest {

    /** Builds a failed call as the server sends it: status, description, and the detail in the trailer. */
    private static StatusRuntimeException failure(Status.Code code, ErrorDetail detail) {
        return Status.fromCode(code).withDescription(detail.getMessage())
                .asRuntimeException(WireErrors.trailers(detail));
    }

    /** Builds a NOT_LEADER answer naming the leader, as a follower sends it. */
    private static StatusRuntimeException notLeader(String leaderAddress) {
        return failure(Status.Code.UNAVAILABLE, ErrorDetail.newBuilder().setReason(Reason.REASON_NOT_LEADER)
                .setLeaderAddress(leaderAddress).setMessage("not the leader; leader is '" + leaderAddress + "'")
                .build());
    }

    private static ErrorDetail.Builder detail(Reason reason, String message) {
        return ErrorDetail.newBuilder().setReason(reason).setMessage(message);
    }

    @Test
    void toException_invalidArgument_carriesFieldValueAndMessage() {
        FencerException mapped = WireErrors.toException(failure(Status.Code.INVALID_ARGUMENT,
                detail(Reason.REASON_INVALID_ARGUMENT, "ttl 5 ms is below 1000 ms").setField("ttl_millis")
                        .setValue("5").build()));

        assertThat(mapped).isInstanceOf(InvalidArgumentException.class).hasMessage("ttl 5 ms is below 1000 ms");
        InvalidArgumentException invalid = (InvalidArgumentException) mapped;
        assertThat(invalid.field()).isEqualTo("ttl_millis");
        assertThat(invalid.value()).isEqualTo("5");
        assertThat(invalid.getCause()).isInstanceOf(StatusRuntimeException.class);
    }

    @Test
    void toException_limitExceeded_carriesLimitAndValue() {
        FencerException mapped = WireErrors.toException(failure(Status.Code.RESOURCE_EXHAUSTED,
                detail(Reason.REASON_LIMIT_EXCEEDED, "1000 waiters on lock 'a', the maximum")
                        .setLimit("waitersPerLockMax").setLimitValue(1000).build()));

        assertThat(mapped).isInstanceOf(LimitExceededException.class)
                .hasMessage("1000 waiters on lock 'a', the maximum");
        assertThat(((LimitExceededException) mapped).limit()).isEqualTo("waitersPerLockMax");
        assertThat(((LimitExceededException) mapped).limitValue()).isEqualTo(1000);
    }

    @Test
    void toException_sessionExpired_carriesSessionId() {
        FencerException mapped = WireErrors.toException(failure(Status.Code.FAILED_PRECONDITION,
                detail(Reason.REASON_SESSION_EXPIRED, "session 42 has ended").setSessionId(42).build()));

        assertThat(mapped).isInstanceOf(SessionExpiredException.class).hasMessage("session 42 has ended");
        assertThat(((SessionExpiredException) mapped).sessionId()).isEqualTo(42);
    }

    @Test
    void toException_notHolder_carriesLockPresentedAndCurrent() {
        FencerException mapped = WireErrors.toException(failure(Status.Code.FAILED_PRECONDITION,
                detail(Reason.REASON_NOT_HOLDER, "x").setLock("orders").setPresentedToken(31).setCurrentToken(32)
                        .build()));

        NotHolderException notHolder = (NotHolderException) mapped;
        assertThat(notHolder.lock()).isEqualTo("orders");
        assertThat(notHolder.presented()).isEqualTo(31);
        assertThat(notHolder.current()).isEqualTo(32);
        assertThat(notHolder.getMessage()).isEqualTo(new NotHolderException("orders", 31, 32).getMessage());
    }

    @Test
    void toException_staleToken_carriesScopeTokensAndPolicyFromTheServersSentence() {
        String serverSentence = new StaleTokenException("orders", 31, 32, FencePolicy.STRICT).getMessage();
        FencerException mapped = WireErrors.toException(failure(Status.Code.FAILED_PRECONDITION,
                detail(Reason.REASON_STALE_TOKEN, serverSentence).setLock("orders").setPresentedToken(31)
                        .setCurrentToken(32).build()));

        StaleTokenException stale = (StaleTokenException) mapped;
        assertThat(stale.scope()).isEqualTo("orders");
        assertThat(stale.presented()).isEqualTo(31);
        assertThat(stale.accepted()).isEqualTo(32);
        assertThat(stale).hasMessage(serverSentence);
    }

    @Test
    void toException_scopeMismatch_carriesScopeAndTheTokenNamedByTheServersSentence() {
        String serverSentence = new ScopeMismatchException("payments", new FencingToken("orders", 7)).getMessage();
        // The server's detail names only the scope; the token is in the sentence core formatted.
        FencerException mapped = WireErrors.toException(failure(Status.Code.FAILED_PRECONDITION,
                detail(Reason.REASON_SCOPE_MISMATCH, serverSentence).setLock("payments").build()));

        ScopeMismatchException mismatch = (ScopeMismatchException) mapped;
        assertThat(mismatch.scope()).isEqualTo("payments");
        assertThat(mismatch.tokenLock()).isEqualTo("orders");
        assertThat(mismatch).hasMessage(serverSentence);
    }

    @Test
    void toException_tokenExhausted_carriesLockAndTheMaximum() {
        String serverSentence = new TokenExhaustedException("orders", FencingToken.VALUE_MAX).getMessage();
        FencerException mapped = WireErrors.toException(failure(Status.Code.FAILED_PRECONDITION,
                detail(Reason.REASON_TOKEN_EXHAUSTED, serverSentence).setLock("orders").build()));

        assertThat(mapped).isInstanceOf(TokenExhaustedException.class).hasMessage(serverSentence);
        assertThat(((TokenExhaustedException) mapped).lock()).isEqualTo("orders");
    }

    @Test
    void toException_badTokenSignature_carriesTokenAndWhy() {
        String serverSentence = new BadTokenSignatureException("orders", 9, "it is unsigned").getMessage();
        FencerException mapped = WireErrors.toException(failure(Status.Code.UNAUTHENTICATED,
                detail(Reason.REASON_BAD_TOKEN_SIGNATURE, serverSentence).build()));

        BadTokenSignatureException bad = (BadTokenSignatureException) mapped;
        assertThat(bad.lock()).isEqualTo("orders");
        assertThat(bad.value()).isEqualTo(9);
        assertThat(bad.why()).isEqualTo("it is unsigned");
        assertThat(bad).hasMessage(serverSentence);
    }

    @Test
    void toException_notLeader_carriesLeaderAddress() {
        FencerException mapped = WireErrors.toException(notLeader("10.0.0.2:7070"));

        assertThat(mapped).isInstanceOf(NotLeaderException.class);
        assertThat(((NotLeaderException) mapped).leaderAddress()).isEqualTo("10.0.0.2:7070");
    }

    @Test
    void toException_unavailableAndInternalReasons_carryTheServersSentence() {
        assertThat(WireErrors.toException(failure(Status.Code.UNAVAILABLE,
                detail(Reason.REASON_UNAVAILABLE, "no leader elected yet").build())))
                .isInstanceOf(UnavailableException.class).hasMessage("no leader elected yet");
        assertThat(WireErrors.toException(failure(Status.Code.INTERNAL,
                detail(Reason.REASON_INTERNAL, "bug: negative waiters").build())))
                .isInstanceOf(InternalException.class).hasMessage("bug: negative waiters");
    }

    @Test
    void toException_everyReason_mapsToTheExceptionOfThatReason() {
        Arrays.stream(Reason.values())
                .filter(reason -> reason != Reason.UNRECOGNIZED && reason != Reason.REASON_UNSPECIFIED)
                .forEach(reason -> {
                    ErrorDetail detail = detail(reason, "m").setLock("orders").setPresentedToken(3).build();
                    FencerException mapped = WireErrors.toException(failure(Status.Code.FAILED_PRECONDITION,
                            detail));
                    String expected = reason == Reason.REASON_SCOPE_MISMATCH ? "INTERNAL" // "m" names no token
                            : reason.name().substring("REASON_".length());
                    assertThat(mapped.reason()).as("reason %s", reason).isEqualTo(ErrorReason.valueOf(expected));
                });
    }

    @Test
    void toException_withoutDetail_mapsByStatus() {
        assertThat(WireErrors.toException(Status.UNAVAILABLE.withDescription("io exception")
                .asRuntimeException())).isInstanceOf(UnavailableException.class).hasMessageContaining("io exception");
        assertThat(WireErrors.toException(Status.DEADLINE_EXCEEDED.asRuntimeException()))
                .isInstanceOf(UnavailableException.class);
        assertThat(WireErrors.toException(Status.INTERNAL.withDescription("RST_STREAM").asRuntimeException()))
                .isInstanceOf(InternalException.class).hasMessageContaining("RST_STREAM");
        assertThat(WireErrors.toException(Status.UNIMPLEMENTED.asRuntimeException()))
                .isInstanceOf(InternalException.class).hasMessageContaining("UNIMPLEMENTED");
    }

    @Test
    void toException_unparsableDetailOrUnknownReason_mapsByStatus() {
        Metadata garbage = new Metadata();
        garbage.put(WireErrors.DETAIL_KEY, new byte[] {(byte) 0xff, 0x01, 0x02});
        assertThat(WireErrors.toException(Status.UNAVAILABLE.asRuntimeException(garbage)))
                .isInstanceOf(UnavailableException.class);

        ErrorDetail unknown = ErrorDetail.newBuilder().setReasonValue(999).setMessage("from the future").build();
        assertThat(WireErrors.toException(failure(Status.Code.FAILED_PRECONDITION, unknown)))
                .isInstanceOf(InternalException.class).hasMessageContaining("FAILED_PRECONDITION");
    }
}
