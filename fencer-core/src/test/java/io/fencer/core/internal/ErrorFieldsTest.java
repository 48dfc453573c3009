package io.fencer.core.internal;

import io.fencer.core.PermissionDeniedException;
import io.fencer.core.SessionUnauthenticatedException;
import io.fencer.core.InternalException;
import io.fencer.core.FencerException;
import io.fencer.core.TokenExhaustedException;
import io.fencer.core.LockMode;
import io.fencer.core.NotHolderException;
import io.fencer.core.ScopeMismatchException;
import io.fencer.core.FencePolicy;
import io.fencer.core.RevisionOutOfRangeException;
import io.fencer.core.FencingToken;
import io.fencer.core.LimitExceededException;
import io.fencer.core.ErrorReason;
import io.fencer.core.MembershipRefusedException;
import io.fencer.core.ModeMismatchException;
import io.fencer.core.NotLeaderException;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.StaleTokenException;
import io.fencer.core.BadTokenSignatureException;
import io.fencer.core.UnavailableException;
import io.fencer.core.IdempotencyMismatchException;
import io.fencer.core.SessionExpiredException;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

class ErrorFieldsTest {

    /** Returns the error of {@code reason} with every field set, each to a value no other field has. */
    private static FencerException sample(ErrorReason reason) {
        return switch (reason) {
            case INVALID_ARGUMENT -> new InvalidArgumentException("field-1", "value-2", "message 3");
            case LIMIT_EXCEEDED -> new LimitExceededException("limit-4", 5, "identity-32", "message 6");
            case SESSION_EXPIRED -> new SessionExpiredException(7, "message 8");
            case SESSION_UNAUTHENTICATED -> new SessionUnauthenticatedException(27, "message 28");
            case NOT_HOLDER -> new NotHolderException("lock-9", 10, 11, 29, "why 33");
            case STALE_TOKEN -> new StaleTokenException("scope-12", 13, 14, FencePolicy.STRICT, "why 35");
            case SCOPE_MISMATCH -> new ScopeMismatchException("scope-15", new FencingToken("lock-16", 17));
            case TOKEN_EXHAUSTED -> new TokenExhaustedException("lock-18", 19);
            case IDEMPOTENCY_MISMATCH -> new IdempotencyMismatchException("scope-27", "key-28", 29);
            case BAD_TOKEN_SIGNATURE -> new BadTokenSignatureException("lock-20", 21, "why 22");
            case PERMISSION_DENIED -> new PermissionDeniedException("identity-27", "permission-28", "lock-29",
                    "why 34");
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
    void toException_ofEveryReasonsFields_returnsSameTypeWithEqualFields(ErrorReason reason) {
        FencerException original = sample(reason);

        ErrorFields fields = ErrorFields.of(original);
        FencerException rebuilt = fields.toException();

        assertThat(fields.reason()).isEqualTo(reason);
        assertThat(fields.message()).isEqualTo(original.getMessage());
        assertThat(rebuilt).isExactlyInstanceOf(original.getClass()).hasMessage(original.getMessage());
        assertThat(rebuilt).usingRecursiveComparison()
                .ignoringFields("stackTrace", "suppressedExceptions", "cause", "depth")
                .isEqualTo(original);
        assertThat(ErrorFields.of(rebuilt)).isEqualTo(fields);
    }

    @Test
    void of_staleTokenAndScopeMismatch_carriesWhatOnlyTheirSentencesNamedBefore() {
        ErrorFields stale = ErrorFields.of(new StaleTokenException("orders", 31, 32, FencePolicy.STRICT));
        ErrorFields mismatch = ErrorFields.of(new ScopeMismatchException("payments", new FencingToken("orders", 7)));
        ErrorFields bad = ErrorFields.of(new BadTokenSignatureException("orders", 9, "it is unsigned"));

        assertThat(stale.policy()).isEqualTo(FencePolicy.STRICT);
        assertThat(mismatch.lock()).isEqualTo("payments");
        assertThat(mismatch.value()).isEqualTo("orders");
        assertThat(mismatch.presentedToken()).isEqualTo(7);
        assertThat(bad.why()).isEqualTo("it is unsigned");
        assertThat(bad.presentedToken()).isEqualTo(9);
    }

    @Test
    void of_permissionDenied_carriesIdentityPermissionAndNameAndRebuildsTheSentence() {
        PermissionDeniedException denied = new PermissionDeniedException("alice", "lock", "jobs/a");

        ErrorFields fields = ErrorFields.of(denied);
        FencerException rebuilt = fields.toBuilder().message("ignored").build().toException();

        assertThat(fields.identity()).isEqualTo("alice");
        assertThat(fields.permission()).isEqualTo("lock");
        assertThat(fields.lock()).isEqualTo("jobs/a");
        assertThat(denied).hasMessage("permission denied: identity 'alice' has no 'lock' permission on 'jobs/a'");
        assertThat(rebuilt).isInstanceOf(PermissionDeniedException.class).hasMessage(denied.getMessage());
        assertThat(new PermissionDeniedException("bob", "lock", ""))
                .hasMessage("permission denied: identity 'bob' has no 'lock' permission on any name");
    }

    @Test
    void of_subclassOfACatalogueType_givesTheFieldsOfThatType() {
        StaleTokenException refusal = new StaleTokenException("orders", 31, 32, FencePolicy.AT_LEAST);
        FencerException subclass = new StaleTokenException(refusal) {
            private static final long serialVersionUID = 1L;
        };

        FencerException rebuilt = ErrorFields.of(subclass).toException();

        assertThat(rebuilt).isExactlyInstanceOf(StaleTokenException.class).hasMessage(refusal.getMessage());
    }

    @Test
    void of_errorThatIsNotTheTypeOfItsReason_failsFast() {
        FencerException impostor = new FencerException("not a NotHolderException") {
            private static final long serialVersionUID = 1L;

            @Override
            public ErrorReason reason() {
                return ErrorReason.NOT_HOLDER;
            }
        };

        assertThatThrownBy(() -> ErrorFields.of(impostor)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("NOT_HOLDER").hasMessageContaining("NotHolderException");
    }

    /** Regression: a detail whose value is no number (a malformed or generic one) made toException throw. */
    @Test
    void toException_outOfRangeWhoseValueIsNoNumber_buildsItWithRevisionZero() {
        FencerException error = ErrorFields.builder(ErrorReason.OUT_OF_RANGE).value("orders").oldestRevision(12)
                .build().toException();

        assertThat(error).isInstanceOf(RevisionOutOfRangeException.class);
        assertThat(((RevisionOutOfRangeException) error).requestedRevision()).isZero();
        assertThat(((RevisionOutOfRangeException) error).oldestRevision()).isEqualTo(12);
    }

    @Test
    void toBuilder_ofFields_buildsEqualFields() {
        ErrorFields fields = new ErrorFields(ErrorReason.INTERNAL, "m", "f", "v", "l", 1, 2, "k", 3, 4, "h:5",
                FencePolicy.STRICT, "w", "i", "p");

        assertThat(fields.toBuilder().build()).isEqualTo(fields);
        assertThat(ErrorFields.builder(ErrorReason.INTERNAL).build())
                .isEqualTo(new ErrorFields(ErrorReason.INTERNAL, "", "", "", "", 0, 0, "", 0, 0, "", null, "", "", ""));
    }

    @Test
    void notHolder_presentedBySession_namesTheSessionAndTheHolderNeverTheOtherWay() {
        NotHolderException bySession = new NotHolderException("orders", 5, 5, 3);
        NotHolderException byToken = new NotHolderException("orders", 4, 0);

        assertThat(bySession).hasMessage("token orders#5 is not held by session 3 on lock 'orders'; "
                + "the holder is orders#5");
        assertThat(bySession.sessionId()).isEqualTo(3);
        assertThat(byToken).hasMessage("token orders#4 is not the holder of lock 'orders'; the lock is free");
        assertThat(byToken.sessionId()).isZero();
    }
}
