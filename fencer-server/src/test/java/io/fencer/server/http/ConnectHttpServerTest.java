package io.fencer.server.http;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Status;
import java.io.EOFException;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The HTTP port's pieces that need no server: the Connect code table, header parsing. */
class ConnectHttpServerTest {
    @Test
    void httpStatus_everyCode_isTheConnectProtocolsStatus() {
        // connectrpc.com/docs/protocol#error-codes
        Map<Status.Code, Integer> table = Map.ofEntries(Map.entry(Status.Code.CANCELLED, 499),
                Map.entry(Status.Code.UNKNOWN, 500), Map.entry(Status.Code.INVALID_ARGUMENT, 400),
                Map.entry(Status.Code.DEADLINE_EXCEEDED, 504), Map.entry(Status.Code.NOT_FOUND, 404),
                Map.entry(Status.Code.ALREADY_EXISTS, 409), Map.entry(Status.Code.PERMISSION_DENIED, 403),
                Map.entry(Status.Code.RESOURCE_EXHAUSTED, 429), Map.entry(Status.Code.FAILED_PRECONDITION, 400),
                Map.entry(Status.Code.ABORTED, 409), Map.entry(Status.Code.OUT_OF_RANGE, 400),
                Map.entry(Status.Code.UNIMPLEMENTED, 501), Map.entry(Status.Code.INTERNAL, 500),
                Map.entry(Status.Code.UNAVAILABLE, 503), Map.entry(Status.Code.DATA_LOSS, 500),
                Map.entry(Status.Code.UNAUTHENTICATED, 401));
        table.forEach((code, status) -> assertThat(ConnectErrors.httpStatus(code)).as(code.name()).isEqualTo(status));
    }

    @Test
    void code_cancelled_isSpelledCanceledAndOthersInLowerCase() {
        assertThat(ConnectErrors.code(Status.Code.CANCELLED)).isEqualTo("canceled");
        assertThat(ConnectErrors.code(Status.Code.FAILED_PRECONDITION)).isEqualTo("failed_precondition");
        assertThat(ConnectErrors.code(Status.Code.UNAUTHENTICATED)).isEqualTo("unauthenticated");
    }

    @Test
    void of_errorWithoutDetails_hasCodeAndMessageOnly() {
        ConnectErrors.Answer answer = ConnectErrors.of(Status.UNAVAILABLE.withDescription("down")
                .asRuntimeException());
        assertThat(answer.httpStatus()).isEqualTo(503);
        assertThat(answer.json()).isEqualTo("{\"code\":\"unavailable\",\"message\":\"down\"}\n");
    }

    @Test
    void mediaType_withParametersAndCase_isTheBareLowerCaseType() {
        assertThat(ConnectHttpServer.mediaType("Application/JSON; charset=utf-8")).isEqualTo("application/json");
        assertThat(ConnectHttpServer.mediaType("application/proto")).isEqualTo("application/proto");
        assertThat(ConnectHttpServer.mediaType(null)).isEmpty();
    }

    @Test
    void timeoutMillis_header_isPositiveAndAtMostTenDigits() {
        assertThat(ConnectHttpServer.timeoutMillis(null)).isZero();
        assertThat(ConnectHttpServer.timeoutMillis("250")).isEqualTo(250);
        assertThat(ConnectHttpServer.timeoutMillis("9999999999")).isEqualTo(9_999_999_999L);
        assertThat(ConnectHttpServer.timeoutMillis("0")).isEqualTo(-1);
        assertThat(ConnectHttpServer.timeoutMillis("12345678901")).isEqualTo(-1);
        assertThat(ConnectHttpServer.timeoutMillis("-5")).isEqualTo(-1);
        assertThat(ConnectHttpServer.timeoutMillis("1e3")).isEqualTo(-1);
    }

    @Test
    void withoutClassName_parserMessage_dropsTheExceptionClassPrefix() {
        assertThat(ConnectHttpServer.withoutClassName(new IllegalStateException(
                "java.io.EOFException: End of input at line 1 column 18 path $.ttlMillis")))
                .isEqualTo("End of input at line 1 column 18 path $.ttlMillis");
        assertThat(ConnectHttpServer.withoutClassName(new EOFException("Cannot find field: x")))
                .isEqualTo("Cannot find field: x");
    }
}
