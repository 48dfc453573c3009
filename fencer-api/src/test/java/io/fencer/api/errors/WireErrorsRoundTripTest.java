package io.fencer.api.errors;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.Reason;
import io.fencer.core.BadTokenSignatureException;
import io.fencer.core.internal.ErrorFields;
import io.fencer.core.ErrorReason;
import io.fencer.core.FencePolicy;
import io.fencer.core.FencerException;
import io.fencer.core.FencingToken;
import io.fencer.core.IdempotencyMismatchException;
import io.fencer.core.InternalException;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LimitExceededException;
import io.fencer.core.LockMode;
import io.fencer.core.MembershipRefusedException;
import io.fencer.core.ModeMismatchException;
import io.fencer.core.NotHolderException;
import io.fencer.core.NotLeaderException;
import io.fencer.core.PermissionDeniedException;
import io.fencer.core.RevisionOutOfRangeException;
import io.fencer.core.ScopeMismatchException;
import io.fencer.core.SessionExpiredException;
import io.fencer.core.SessionUnauthenticatedException;
import io.fencer.core.StaleTokenException;
import io.fencer.core.TokenExhaustedException;
import io.fencer.core.UnavailableException;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** The server's path (exception to status) and the client's (status back to exception) agree on every field. */
class WireErrorsRoundTripTest {
    /** The table at the top of errors.proto: the one documented status of each reason. */
    private static final Map<ErrorReason, Status.Code> PROTO_TABLE = protoTable();

    /** Returns the error of {@code reason} with every field set, each to a value no other field has. */
    static FencerException sample(ErrorReason reason) {
        return switch (reason) {
            case INVALID_ARGUMENT -> new InvalidArgumentException("field-1", "value-2", "message 3");
            case LIMIT_EXCEEDED -> new LimitExceededException("limit-4", 5, "identity-40", "message 6");
            case SESSION_EXPIRED -> new SessionExpiredException(7, "message 8");
            case SESSION_UNAUTHENTICATED -> new SessionUnauthenticatedException(27, "message 28");
            case NOT_HOLDER -> new NotHolderException("lock-9", 10, 11, 29, "why 41");
            case STALE_TOKEN -> new StaleTokenException("scope-12", 13, 14, FencePolicy.STRICT, "why 43");
            case SCOPE_MISMATCH -> new ScopeMismatchException("scope-15", new FencingToken("lock-16", 17));
            case TOKEN_EXHAUSTED -> new TokenExhaustedException("lock-18", 19);
            case IDEMPOTENCY_MISMATCH -> new IdempotencyMismatchException("scope-27", "key-28", 29);
            case BAD_TOKEN_SIGNATURE -> new BadTokenSignatureException("lock-20", 21, "why 22");
            case PERMISSION_DENIED -> new PermissionDeniedException("identity-27", "permission-28", "lock-29", "why 42");
            case NOT_LEADER -> new NotLeaderException("host-23:24");
            case UNAVAILABLE -> new UnavailableException("message 25");
            case INTERNAL -> new InternalException("message 26");
            case MODE_MISMATCH -> new ModeMismatchException("scope-30", 31, LockMode.SHARED);
            case OUT_OF_RANGE -> new RevisionOutOfRangeException(30, 31);
            case MEMBERSHIP_REFUSED -> new MembershipRefusedException("peer-32", "why 33");
        };
    }

    @ParameterizedTest
    @EnumSource(ErrorReason.class)
    void toException_ofTheServersStatusException_returnsSameTypeStatusAndEveryField(ErrorReason reason) {
        FencerException original = sample(reason);
        assertEveryFieldSetAndDistinct(original);

        StatusRuntimeException onTheWire = WireErrors.toStatusException(original);
        FencerException mapped = WireErrors.toException(onTheWire);

        assertThat(onTheWire.getStatus().getCode()).isEqualTo(PROTO_TABLE.get(reason));
        assertThat(onTheWire.getStatus().getDescription()).isEqualTo(original.getMessage());
        ErrorDetail detail = WireErrors.detail(onTheWire).orElseThrow();
        // Every field travels in the detail itself, none is recovered from the sentence as for older servers.
        ErrorFields sent = WireErrors.fields(reason, detail.getMessage(), detail);
        assertThat(sent).isEqualTo(ErrorFields.of(original));
        assertThat(OlderServers.complete(sent)).isEqualTo(sent);
        assertThat(mapped).isExactlyInstanceOf(original.getClass()).hasMessage(original.getMessage());
        assertThat(mapped.reason()).isEqualTo(reason);
        assertThat(ErrorFields.of(mapped)).isEqualTo(ErrorFields.of(original));
        assertThat(mapped).usingRecursiveComparison()
                .ignoringFields("stackTrace", "suppressedExceptions", "cause", "depth")
                .isEqualTo(original);
        assertThat(mapped.getCause()).isSameAs(onTheWire);
    }

    @Test
    void reason_everyWireReasonButUnspecified_pairsWithExactlyOneReason() {
        List<Reason> wireReasons = Arrays.stream(Reason.values())
                .filter(wire -> wire != Reason.REASON_UNSPECIFIED && wire != Reason.UNRECOGNIZED)
                .toList();

        assertThat(wireReasons).hasSize(ErrorReason.values().length);
        assertThat(wireReasons).map(wire -> WireErrors.reason(wire).orElseThrow())
                .containsExactlyInAnyOrder(ErrorReason.values());
        for (ErrorReason reason : ErrorReason.values()) {
            assertThat(WireErrors.reason(WireErrors.wireReason(reason))).contains(reason);
        }
        assertThat(WireErrors.reason(Reason.REASON_UNSPECIFIED)).isEmpty();
        assertThat(WireErrors.reason(Reason.UNRECOGNIZED)).isEmpty();
    }

    @Test
    void status_everyReason_isTheStatusTheProtoTableNames() {
        assertThat(PROTO_TABLE).containsOnlyKeys(ErrorReason.values());
        for (ErrorReason reason : ErrorReason.values()) {
            assertThat(WireErrors.status(reason).getCode()).as("%s", reason).isEqualTo(PROTO_TABLE.get(reason));
        }
    }

    @Test
    @SuppressWarnings("deprecation") // acts as a server of the previous release, which sent fencer-error-bin alone
    void toException_scopeMismatchNamingNoValidToken_mapsToInternalKeepingTheSentence() {
        ErrorDetail detail = ErrorDetail.newBuilder().setReason(Reason.REASON_SCOPE_MISMATCH).setMessage("odd")
                .setLock("payments").setValue("orders").setPresentedToken(-1).build();
        StatusRuntimeException failure = Status.FAILED_PRECONDITION.withDescription("odd")
                .asRuntimeException(WireErrors.trailers(detail));

        assertThat(WireErrors.toException(failure)).isInstanceOf(InternalException.class)
                .hasMessageContaining("SCOPE_MISMATCH").hasMessageEndingWith(": odd");
    }

    /** Checks that the sample leaves no field at its default and gives no two fields the same value. */
    private static void assertEveryFieldSetAndDistinct(FencerException error) {
        List<String> values = new ArrayList<>();
        for (Class<?> type = error.getClass(); type != FencerException.class; type = type.getSuperclass()) {
            for (Field field : type.getDeclaredFields()) {
                if (Modifier.isStatic(field.getModifiers())) {
                    continue;
                }
                field.setAccessible(true);
                Object value;
                try {
                    value = field.get(error);
                } catch (IllegalAccessException e) {
                    throw new AssertionError(e);
                }
                assertThat(value).as("%s.%s", type.getSimpleName(), field.getName())
                        .isNotNull().isNotIn("", 0L, 0, FencePolicy.AT_LEAST);
                values.add(String.valueOf(value));
            }
        }
        values.add(error.getMessage());
        assertThat(values).as("fields of %s", error).doesNotHaveDuplicates();
    }

    private static Map<ErrorReason, Status.Code> protoTable() {
        Pattern row = Pattern.compile("^//\\s+([A-Z_]+)\\s+([A-Z_]+)\\s{2,}\\S");
        Map<ErrorReason, Status.Code> table = new EnumMap<>(ErrorReason.class);
        try {
            for (String line : Files.readAllLines(Path.of("src/main/proto/fencer/v1/errors.proto"))) {
                if (line.startsWith("syntax")) {
                    break;
                }
                Matcher matcher = row.matcher(line);
                if (matcher.find()) {
                    Status.Code previous = table.put(ErrorReason.valueOf(matcher.group(1)),
                            Status.Code.valueOf(matcher.group(2)));
                    assertThat(previous).as("errors.proto lists %s twice", matcher.group(1)).isNull();
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return table;
    }
}
