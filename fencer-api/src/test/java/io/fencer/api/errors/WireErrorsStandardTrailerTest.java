package io.fencer.api.errors;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.Any;
import com.google.rpc.ErrorInfo;
import io.fencer.api.v1.CallError;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.Reason;
import io.fencer.core.internal.ErrorFields;
import io.fencer.core.ErrorReason;
import io.fencer.core.FencePolicy;
import io.fencer.core.FencerException;
import io.fencer.core.InternalException;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LockNames;
import io.fencer.core.StaleTokenException;
import io.fencer.core.UnavailableException;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.StatusProto;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The detail in gRPC's standard rich error model: {@code grpc-status-details-bin} holds a {@code google.rpc.Status}
 * with the detail packed as an {@link Any}, read here byte by byte and with grpc-java's {@link StatusProto}; the
 * deprecated {@code fencer-error-bin} stays beside it, and the client reads either alone.
 */
@SuppressWarnings("deprecation") // the deprecated trailer is checked, and sent alone, on purpose
class WireErrorsStandardTrailerTest {
    private static final Metadata.Key<byte[]> STANDARD_KEY =
            Metadata.Key.of("grpc-status-details-bin", Metadata.BINARY_BYTE_MARSHALLER);
    /** grpc-java's default limit on the metadata a client accepts (NettyChannelBuilder's max header list size). */
    private static final int METADATA_BYTES_MAX_DEFAULT = 8192;

    @ParameterizedTest
    @EnumSource(ErrorReason.class)
    void toStatusException_everyReason_packsTheDetailInGrpcStatusDetailsBin(ErrorReason reason) throws Exception {
        FencerException original = WireErrorsRoundTripTest.sample(reason);

        StatusRuntimeException onTheWire = WireErrors.toStatusException(original);

        com.google.rpc.Status standard = com.google.rpc.Status.parseFrom(onTheWire.getTrailers().get(STANDARD_KEY));
        assertThat(StatusProto.fromThrowable(onTheWire)).isEqualTo(standard);
        assertThat(standard.getCode()).isEqualTo(WireErrors.status(reason).getCode().value())
                .isEqualTo(onTheWire.getStatus().getCode().value());
        assertThat(standard.getMessage()).isEqualTo(original.getMessage())
                .isEqualTo(onTheWire.getStatus().getDescription());
        assertThat(standard.getDetailsList()).extracting(Any::getTypeUrl)
                .containsExactly("type.googleapis.com/fencer.v1.ErrorDetail");
        ErrorDetail packed = standard.getDetails(0).unpack(ErrorDetail.class);
        assertThat(packed).isEqualTo(WireErrors.toDetail(original).toBuilder().clearMessage().build());
        assertThat(ErrorDetail.parseFrom(onTheWire.getTrailers().get(WireErrors.DETAIL_KEY)))
                .as("the deprecated trailer").isEqualTo(packed);
    }

    @ParameterizedTest
    @EnumSource(ErrorReason.class)
    void toException_withTheStandardTrailerAlone_mapsEveryField(ErrorReason reason) {
        FencerException original = WireErrorsRoundTripTest.sample(reason);
        StatusRuntimeException standardOnly = withoutDeprecatedTrailer(WireErrors.toStatusException(original));

        FencerException mapped = WireErrors.toException(standardOnly);

        assertThat(standardOnly.getTrailers().containsKey(WireErrors.DETAIL_KEY)).isFalse();
        assertThat(mapped).isExactlyInstanceOf(original.getClass()).hasMessage(original.getMessage());
        assertThat(ErrorFields.of(mapped)).isEqualTo(ErrorFields.of(original));
        assertThat(WireErrors.detail(standardOnly)).contains(WireErrors.toDetail(original));
    }

    @Test
    void toException_withTheDeprecatedTrailerAloneAsThisServerWritesIt_mapsEveryField() {
        StaleTokenException original = new StaleTokenException("orders", 33, 34, FencePolicy.STRICT);
        StatusRuntimeException sent = WireErrors.toStatusException(original);
        Metadata deprecatedOnly = new Metadata();
        deprecatedOnly.put(WireErrors.DETAIL_KEY, sent.getTrailers().get(WireErrors.DETAIL_KEY));

        // The previous release's client reads this trailer; its sentence comes from the description, as here.
        FencerException mapped = WireErrors.toException(sent.getStatus().asRuntimeException(deprecatedOnly));

        assertThat(mapped).isExactlyInstanceOf(StaleTokenException.class).hasMessage(original.getMessage());
        assertThat(ErrorFields.of(mapped)).isEqualTo(ErrorFields.of(original));
    }

    @Test
    void detail_bothTrailersDisagree_isTheStandardOnes() {
        ErrorDetail standard = ErrorDetail.newBuilder().setReason(Reason.REASON_NOT_HOLDER).setLock("new").build();
        ErrorDetail deprecated = ErrorDetail.newBuilder().setReason(Reason.REASON_NOT_HOLDER).setLock("old").build();
        Status status = Status.FAILED_PRECONDITION.withDescription("not the holder");
        Metadata trailers = WireErrors.trailers(deprecated);

        StatusRuntimeException failure = StatusProto.toStatusRuntimeException(
                WireErrors.richStatus(status, standard), trailers);

        assertThat(WireErrors.detail(failure).orElseThrow().getLock()).isEqualTo("new");
        assertThat(WireErrors.detail(failure).orElseThrow().getMessage()).isEqualTo("not the holder");
    }

    @Test
    void detail_standardTrailerUnparsableOfAnotherCodeOrWithoutDetail_fallsBackToTheDeprecatedOne() {
        ErrorDetail deprecated = ErrorDetail.newBuilder().setReason(Reason.REASON_SESSION_EXPIRED).setSessionId(7)
                .setMessage("session 7 expired").build();
        Metadata garbage = WireErrors.trailers(deprecated);
        garbage.put(STANDARD_KEY, new byte[] {(byte) 0xff, 0x01, 0x02});
        Metadata otherCode = WireErrors.trailers(deprecated);
        otherCode.put(STANDARD_KEY, com.google.rpc.Status.newBuilder().setCode(Status.Code.INTERNAL.value())
                .addDetails(Any.pack(deprecated.toBuilder().setSessionId(8).build())).build().toByteArray());
        Metadata foreignDetail = WireErrors.trailers(deprecated);
        foreignDetail.put(STANDARD_KEY, com.google.rpc.Status.newBuilder()
                .setCode(Status.Code.FAILED_PRECONDITION.value())
                .addDetails(Any.pack(ErrorInfo.newBuilder().setReason("SOMETHING_ELSE").build())).build()
                .toByteArray());

        for (Metadata trailers : new Metadata[] {garbage, otherCode, foreignDetail}) {
            StatusRuntimeException failure = Status.FAILED_PRECONDITION.asRuntimeException(trailers);
            assertThat(WireErrors.detail(failure)).contains(deprecated);
            assertThat(WireErrors.toException(failure).reason()).isEqualTo(ErrorReason.SESSION_EXPIRED);
        }
    }

    @Test
    void detail_standardStatusWithOtherDetailsFirst_findsTheErrorDetail() {
        ErrorDetail detail = ErrorDetail.newBuilder().setReason(Reason.REASON_NOT_LEADER)
                .setLeaderAddress("10.0.0.2:7070").build();
        com.google.rpc.Status standard = com.google.rpc.Status.newBuilder()
                .setCode(Status.Code.UNAVAILABLE.value()).setMessage("not the leader")
                .addDetails(Any.pack(ErrorInfo.newBuilder().setReason("PROXY").setDomain("example.com").build()))
                .addDetails(Any.pack(detail)).build();

        FencerException mapped = WireErrors.toException(StatusProto.toStatusRuntimeException(standard));

        assertThat(mapped.reason()).isEqualTo(ErrorReason.NOT_LEADER);
        assertThat(ErrorFields.of(mapped).leaderAddress()).isEqualTo("10.0.0.2:7070");
    }

    @Test
    void toException_standardStatusWithoutAnyDetail_mapsByStatus() {
        com.google.rpc.Status bare = com.google.rpc.Status.newBuilder().setCode(Status.Code.UNAVAILABLE.value())
                .setMessage("proxy says no").build();

        assertThat(WireErrors.toException(StatusProto.toStatusRuntimeException(bare)))
                .isInstanceOf(UnavailableException.class).hasMessageContaining("proxy says no");
    }

    @ParameterizedTest
    @EnumSource(ErrorReason.class)
    @SuppressWarnings("deprecation") // the deprecated fields are checked on purpose: older clients read them
    void toCallError_everyReason_carriesTheUnaryCallsStatusAndTheDeprecatedFields(ErrorReason reason) {
        FencerException original = WireErrorsRoundTripTest.sample(reason);
        StatusRuntimeException unary = WireErrors.toStatusException(original);

        CallError error = WireErrors.toCallError(unary);
        CallError standardOnly = CallError.newBuilder().setStatus(error.getStatus()).build();

        assertThat(error.getStatus()).isEqualTo(StatusProto.fromThrowable(unary));
        assertThat(error.getStatusCode()).isEqualTo(unary.getStatus().getCode().value());
        assertThat(error.getDescription()).isEqualTo(original.getMessage());
        assertThat(error.getDetail()).isEqualTo(WireErrors.toDetail(original));
        for (CallError received : new CallError[] {error, standardOnly}) {
            FencerException mapped = WireErrors.toException(WireErrors.toStatusException(received));
            assertThat(mapped).isExactlyInstanceOf(original.getClass()).hasMessage(original.getMessage());
            assertThat(ErrorFields.of(mapped)).isEqualTo(ErrorFields.of(original));
        }
    }

    @Test
    @SuppressWarnings("deprecation") // builds what a server of the previous release sent
    void toStatusException_callErrorOfThePreviousRelease_mapsFromTheDeprecatedFields() {
        StaleTokenException original = new StaleTokenException("orders", 33, 34, FencePolicy.AT_LEAST);
        CallError previous = CallError.newBuilder().setStatusCode(Status.Code.FAILED_PRECONDITION.value())
                .setDescription(original.getMessage()).setDetail(WireErrors.toDetail(original)).build();

        StatusRuntimeException failure = WireErrors.toStatusException(previous);

        assertThat(failure.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
        assertThat(ErrorFields.of(WireErrors.toException(failure))).isEqualTo(ErrorFields.of(original));
    }

    @Test
    void toStatusException_callErrorOfAnUnknownCode_isUnknownKeepingTheMessage() {
        CallError future = CallError.newBuilder().setStatus(com.google.rpc.Status.newBuilder().setCode(99)
                .setMessage("from the future")).build();

        StatusRuntimeException failure = WireErrors.toStatusException(future);

        assertThat(failure.getStatus().getCode()).isEqualTo(Status.Code.UNKNOWN);
        assertThat(failure.getStatus().getDescription()).contains("99", "from the future");
        assertThat(WireErrors.toException(failure)).isInstanceOf(InternalException.class);
    }

    @Test
    @SuppressWarnings("deprecation") // the deprecated fields are checked on purpose: older clients read them
    void toCallError_statusWithoutDetail_carriesCodeAndDescriptionOnly() {
        CallError error = WireErrors.toCallError(Status.CANCELLED.withDescription("client went away")
                .asRuntimeException());

        assertThat(error.getStatus()).isEqualTo(com.google.rpc.Status.newBuilder()
                .setCode(Status.Code.CANCELLED.value()).setMessage("client went away").build());
        assertThat(error.getStatusCode()).isEqualTo(Status.Code.CANCELLED.value());
        assertThat(error.hasDetail()).isFalse();
        assertThat(WireErrors.toException(WireErrors.toStatusException(error)))
                .isInstanceOf(UnavailableException.class);
    }

    /**
     * Regression guard: the longest refusal core makes (a value of 300 characters of 3-byte UTF-8, named again in
     * the sentence) fits, with the description and both trailers, in the metadata gRPC clients accept by default.
     * With the sentence in every detail as well it took 9,311 bytes, and the client saw INTERNAL "http2 exception".
     */
    @Test
    void toStatusException_longestValueCoreRefusesWith_metadataFitsTheClientsDefaultLimit() {
        InvalidArgumentException longest = null;
        try {
            LockNames.check("lock", "€".repeat(300));
        } catch (InvalidArgumentException e) {
            longest = e;
        }
        assertThat(longest).isNotNull();
        assertThat(longest.value()).hasSize(300);

        StatusRuntimeException onTheWire = WireErrors.toStatusException(longest);

        assertThat(headerListBytes(onTheWire)).isLessThan(METADATA_BYTES_MAX_DEFAULT - 1024);
    }

    /**
     * Returns the HTTP/2 header list size (RFC 7540 6.5.2: name, value and 32 bytes per field) of a trailers-only
     * answer carrying {@code failure}, as grpc-java encodes it: binary values in base64, the description
     * percent-encoded outside printable ASCII.
     */
    private static int headerListBytes(StatusRuntimeException failure) {
        int bytes = field(":status", "200") + field("content-type", "application/grpc")
                + field("grpc-status", String.valueOf(failure.getStatus().getCode().value()));
        int message = 0;
        for (byte unit : failure.getStatus().getDescription().getBytes(StandardCharsets.UTF_8)) {
            message += unit >= 0x20 && unit < 0x7f && unit != '%' ? 1 : 3;
        }
        bytes += "grpc-message".length() + message + 32;
        for (String key : failure.getTrailers().keys()) {
            assertThat(key).endsWith(Metadata.BINARY_HEADER_SUFFIX);
            byte[] value = failure.getTrailers().get(Metadata.Key.of(key, Metadata.BINARY_BYTE_MARSHALLER));
            bytes += field(key, Base64.getEncoder().withoutPadding().encodeToString(value));
        }
        return bytes;
    }

    private static int field(String name, String value) {
        return name.length() + value.length() + 32;
    }

    private static StatusRuntimeException withoutDeprecatedTrailer(StatusRuntimeException failure) {
        Metadata trailers = new Metadata();
        trailers.merge(failure.getTrailers());
        trailers.discardAll(WireErrors.DETAIL_KEY);
        return failure.getStatus().asRuntimeException(trailers);
    }
}
