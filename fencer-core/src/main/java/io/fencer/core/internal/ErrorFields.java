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
import io.fencer.core.MembershipRefusedException;
import io.fencer.core.ErrorReason;
import io.fencer.core.ModeMismatchException;
import io.fencer.core.NotLeaderException;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.StaleTokenException;
import io.fencer.core.BadTokenSignatureException;
import io.fencer.core.UnavailableException;
import io.fencer.core.IdempotencyMismatchException;
import io.fencer.core.SessionExpiredException;
import java.util.EnumMap;
import java.util.Map;
import java.util.Objects;
import java.util.function.BiConsumer;
import java.util.function.Function;

/**
 * The reason and every field of one {@link FencerException}, flat: the one form in which an error crosses a
 * boundary (the gRPC trailer, the lock state machine's replies). {@link #of(FencerException)} takes an error
 * apart and {@link #toException()} builds the exception of the same reason with equal fields back.
 *
 * <p>This class holds the only table in the code base that knows each exception type's fields; everything that
 * carries errors copies these components one by one and never looks at the type. The components mirror the
 * {@code fencer.v1.ErrorDetail} message field by field, and a reason uses only some of them:
 *
 * <pre>
 *   reason               lock   presentedToken  currentToken  other components
 *   INVALID_ARGUMENT                                          field, value, message
 *   LIMIT_EXCEEDED                                            limit, limitValue, message, identity (quotas)
 *   SESSION_EXPIRED                                           sessionId, message
 *   SESSION_UNAUTHENTICATED                                   sessionId, message
 *   NOT_HOLDER           lock   presented       holder's (0 = the lock is free)  sessionId (0 = none), why
 *   STALE_TOKEN          scope  presented       accepted      policy, why (may be empty)
 *   SCOPE_MISMATCH       scope  presented                     value = the presented token's lock
 *   TOKEN_EXHAUSTED      lock                   last token
 *   IDEMPOTENCY_MISMATCH scope  presented                     value = the idempotency key
 *   BAD_TOKEN_SIGNATURE  lock   presented                     why
 *   PERMISSION_DENIED    lock                                 identity, permission (lock = the name, may be empty),
 *                                                             why (may be empty)
 *   NOT_LEADER                                                leaderAddress
 *   UNAVAILABLE, INTERNAL                                     message
 *   MODE_MISMATCH        scope  presented                     value = the presented token's mode (shared)
 *   OUT_OF_RANGE                                              value = the requested revision, oldestRevision
 *   MEMBERSHIP_REFUSED                                        value = the peer id, why
 * </pre>
 *
 * <p>Components a reason does not use are empty: {@code ""}, {@code 0}, and a null {@code policy}. A reason whose
 * exception builds its sentence from its fields ignores {@code message} when rebuilt; {@code message} always holds
 * the sentence of the error taken apart.
 *
 * @param reason the catalogue reason, never null
 * @param message the error's sentence, {@link Throwable#getMessage()}
 * @param field INVALID_ARGUMENT: the offending field's name
 * @param value INVALID_ARGUMENT: the offending value; SCOPE_MISMATCH: the lock of the presented token;
 *     IDEMPOTENCY_MISMATCH: the idempotency key; MODE_MISMATCH: the presented token's mode
 * @param limit LIMIT_EXCEEDED: the limit's configuration name, e.g. {@code waitersPerLockMax}
 * @param limitValue LIMIT_EXCEEDED: the limit's value
 * @param sessionId SESSION_EXPIRED, SESSION_UNAUTHENTICATED: the session; NOT_HOLDER: the session that presented
 *     the token, or 0
 * @param lock the lock or the resource's scope the error is about
 * @param presentedToken the value of the token the request presented
 * @param currentToken the token in force: the holder's, the resource's accepted one, or the lock's last one
 * @param leaderAddress NOT_LEADER: the leader's client address ({@code host:port}), empty when unknown
 * @param policy STALE_TOKEN: the resource's policy; null for every other reason
 * @param why BAD_TOKEN_SIGNATURE: why the signature was refused, as a clause; PERMISSION_DENIED: why the
 *     permission is needed, when the refusal says more than that the ACL lacks it; NOT_HOLDER: why the call needed
 *     the holder's token; STALE_TOKEN: why the token is stale when the scope itself did not accept the one in force
 *     (each may be empty)
 * @param identity PERMISSION_DENIED: the refused caller's identity; LIMIT_EXCEEDED: the identity a per-identity
 *     quota counts (empty for a limit of the whole server)
 * @param permission PERMISSION_DENIED: the permission the call needed ({@code lock}, {@code read} ...)
 * @param oldestRevision OUT_OF_RANGE: the oldest revision from which the server's Watch history is complete
 */
public record ErrorFields(ErrorReason reason, String message, String field, String value, String limit,
        long limitValue, long sessionId, String lock, long presentedToken, long currentToken, String leaderAddress,
        FencePolicy policy, String why, String identity, String permission, long oldestRevision) {

    private static final Map<ErrorReason, Mapping<?>> MAPPINGS = mappings();

    public ErrorFields {
        Objects.requireNonNull(reason, "reason");
    }

    /** As the canonical constructor, without {@code oldestRevision} (0): every reason but OUT_OF_RANGE. */
    public ErrorFields(ErrorReason reason, String message, String field, String value, String limit,
            long limitValue, long sessionId, String lock, long presentedToken, long currentToken, String leaderAddress,
            FencePolicy policy, String why, String identity, String permission) {
        this(reason, message, field, value, limit, limitValue, sessionId, lock, presentedToken, currentToken,
                leaderAddress, policy, why, identity, permission, 0);
    }

    /**
     * Returns the reason and fields of {@code error}. A subclass of a catalogue type (a client's
     * {@code StaleWriteException}) gives the fields of that type; its own additions are not carried.
     *
     * @throws IllegalArgumentException when the error's class is not the type its reason stands for
     */
    public static ErrorFields of(FencerException error) {
        Objects.requireNonNull(error, "error");
        return MAPPINGS.get(error.reason()).fields(error);
    }

    /**
     * Returns the exception of this reason with these fields: the exact catalogue type, with fields equal to
     * those of the error this was taken from.
     *
     * @throws InvalidArgumentException when the fields cannot form that exception: a SCOPE_MISMATCH whose
     *     {@code value} and {@code presentedToken} are no valid token
     */
    public FencerException toException() {
        return MAPPINGS.get(reason).factory().apply(this);
    }

    /** Returns a builder of the fields of {@code reason}, every other component empty. */
    public static Builder builder(ErrorReason reason) {
        return new Builder(reason);
    }

    /** Returns a builder holding these components, to change some of them. */
    public Builder toBuilder() {
        return new Builder(reason).message(message).field(field).value(value).limit(limit).limitValue(limitValue)
                .sessionId(sessionId).lock(lock).presentedToken(presentedToken).currentToken(currentToken)
                .leaderAddress(leaderAddress).policy(policy).why(why).identity(identity).permission(permission)
                .oldestRevision(oldestRevision);
    }

    /**
     * The one table of the catalogue's types: for each reason, its exception type, which components it fills and
     * how it is built from them. The switch is exhaustive, so a new reason does not compile until it is here.
     */
    private static Mapping<?> mapping(ErrorReason reason) {
        return switch (reason) {
            case INVALID_ARGUMENT -> new Mapping<>(InvalidArgumentException.class,
                    (error, fields) -> fields.field(error.field()).value(error.value()),
                    fields -> new InvalidArgumentException(fields.field(), fields.value(), fields.message()));
            case LIMIT_EXCEEDED -> new Mapping<>(LimitExceededException.class,
                    (error, fields) -> fields.limit(error.limit()).limitValue(error.limitValue())
                            .identity(error.identity()),
                    fields -> new LimitExceededException(fields.limit(), fields.limitValue(), fields.identity(),
                            fields.message()));
            case SESSION_EXPIRED -> new Mapping<>(SessionExpiredException.class,
                    (error, fields) -> fields.sessionId(error.sessionId()),
                    fields -> new SessionExpiredException(fields.sessionId(), fields.message()));
            case SESSION_UNAUTHENTICATED -> new Mapping<>(SessionUnauthenticatedException.class,
                    (error, fields) -> fields.sessionId(error.sessionId()),
                    fields -> new SessionUnauthenticatedException(fields.sessionId(), fields.message()));
            case NOT_HOLDER -> new Mapping<>(NotHolderException.class,
                    (error, fields) -> fields.lock(error.lock()).presentedToken(error.presented())
                            .currentToken(error.current()).sessionId(error.sessionId()).why(error.why()),
                    fields -> new NotHolderException(fields.lock(), fields.presentedToken(), fields.currentToken(),
                            fields.sessionId(), fields.why()));
            case STALE_TOKEN -> new Mapping<>(StaleTokenException.class,
                    (error, fields) -> fields.lock(error.scope()).presentedToken(error.presented())
                            .currentToken(error.accepted()).policy(error.policy()).why(error.why()),
                    fields -> new StaleTokenException(fields.lock(), fields.presentedToken(), fields.currentToken(),
                            fields.policy(), fields.why()));
            case SCOPE_MISMATCH -> new Mapping<>(ScopeMismatchException.class,
                    (error, fields) -> fields.lock(error.scope()).value(error.tokenLock())
                            .presentedToken(error.token().value()),
                    fields -> new ScopeMismatchException(fields.lock(),
                            new FencingToken(fields.value(), fields.presentedToken())));
            case TOKEN_EXHAUSTED -> new Mapping<>(TokenExhaustedException.class,
                    (error, fields) -> fields.lock(error.lock()).currentToken(error.lastToken()),
                    fields -> new TokenExhaustedException(fields.lock(), fields.currentToken()));
            case IDEMPOTENCY_MISMATCH -> new Mapping<>(IdempotencyMismatchException.class,
                    (error, fields) -> fields.lock(error.scope()).value(error.idempotencyKey())
                            .presentedToken(error.token()),
                    fields -> new IdempotencyMismatchException(fields.lock(), fields.value(), fields.presentedToken()));
            case BAD_TOKEN_SIGNATURE -> new Mapping<>(BadTokenSignatureException.class,
                    (error, fields) -> fields.lock(error.lock()).presentedToken(error.value()).why(error.why()),
                    fields -> new BadTokenSignatureException(fields.lock(), fields.presentedToken(), fields.why()));
            case PERMISSION_DENIED -> new Mapping<>(PermissionDeniedException.class,
                    (error, fields) -> fields.lock(error.name()).identity(error.identity())
                            .permission(error.permission()).why(error.why()),
                    fields -> new PermissionDeniedException(fields.identity(), fields.permission(), fields.lock(),
                            fields.why()));
            case NOT_LEADER -> new Mapping<>(NotLeaderException.class,
                    (error, fields) -> fields.leaderAddress(error.leaderAddress()),
                    fields -> new NotLeaderException(fields.leaderAddress()));
            case UNAVAILABLE -> new Mapping<>(UnavailableException.class, (error, fields) -> { },
                    fields -> new UnavailableException(fields.message()));
            case INTERNAL -> new Mapping<>(InternalException.class, (error, fields) -> { },
                    fields -> new InternalException(fields.message()));
            case MODE_MISMATCH -> new Mapping<>(ModeMismatchException.class,
                    (error, fields) -> fields.lock(error.scope()).presentedToken(error.presented())
                            .value(error.mode().text()),
                    // Only a shared token is ever refused for its mode; a detail without the mode still says so.
                    fields -> new ModeMismatchException(fields.lock(), fields.presentedToken(),
                            "exclusive".equals(fields.value()) ? LockMode.EXCLUSIVE : LockMode.SHARED));
            case OUT_OF_RANGE -> new Mapping<>(RevisionOutOfRangeException.class,
                    (error, fields) -> fields.value(Long.toString(error.requestedRevision()))
                            .oldestRevision(error.oldestRevision()),
                    fields -> new RevisionOutOfRangeException(revision(fields.value()), fields.oldestRevision()));
            case MEMBERSHIP_REFUSED -> new Mapping<>(MembershipRefusedException.class,
                    (error, fields) -> fields.value(error.peerId()).why(error.why()),
                    fields -> new MembershipRefusedException(fields.value(), fields.why()));
        };
    }

    /**
     * Returns the revision an OUT_OF_RANGE detail names in {@code value}; 0 when it names none or no number (the
     * sentence still says what the server meant; {@code oldestRevision}, the field that matters, is numeric).
     */
    private static long revision(String value) {
        try {
            return Long.parseUnsignedLong(value);
        } catch (NumberFormatException e) {
            return 0;
        }
    }

    private static Map<ErrorReason, Mapping<?>> mappings() {
        Map<ErrorReason, Mapping<?>> mappings = new EnumMap<>(ErrorReason.class);
        for (ErrorReason reason : ErrorReason.values()) {
            mappings.put(reason, mapping(reason));
        }
        return mappings;
    }

    /** One reason's row of the table: its type, the components it fills, and its factory. */
    private record Mapping<E extends FencerException>(Class<E> type, BiConsumer<E, Builder> filler,
            Function<ErrorFields, E> factory) {

        ErrorFields fields(FencerException error) {
            if (!type.isInstance(error)) {
                throw new IllegalArgumentException(error.getClass().getName() + " has reason " + error.reason()
                        + " but is not a " + type.getName());
            }
            Builder builder = new Builder(error.reason()).message(error.getMessage());
            filler.accept(type.cast(error), builder);
            return builder.build();
        }
    }

    /** Collects the components of one reason; those not set stay empty. */
    public static final class Builder {
        private final ErrorReason reason;
        private String message = "";
        private String field = "";
        private String value = "";
        private String limit = "";
        private long limitValue;
        private long sessionId;
        private String lock = "";
        private long presentedToken;
        private long currentToken;
        private String leaderAddress = "";
        private FencePolicy policy;
        private String why = "";
        private String identity = "";
        private String permission = "";
        private long oldestRevision;

        private Builder(ErrorReason reason) {
            this.reason = Objects.requireNonNull(reason, "reason");
        }

        public Builder message(String message) {
            this.message = message;
            return this;
        }

        public Builder field(String field) {
            this.field = field;
            return this;
        }

        public Builder value(String value) {
            this.value = value;
            return this;
        }

        public Builder limit(String limit) {
            this.limit = limit;
            return this;
        }

        public Builder limitValue(long limitValue) {
            this.limitValue = limitValue;
            return this;
        }

        public Builder sessionId(long sessionId) {
            this.sessionId = sessionId;
            return this;
        }

        public Builder lock(String lock) {
            this.lock = lock;
            return this;
        }

        public Builder presentedToken(long presentedToken) {
            this.presentedToken = presentedToken;
            return this;
        }

        public Builder currentToken(long currentToken) {
            this.currentToken = currentToken;
            return this;
        }

        public Builder leaderAddress(String leaderAddress) {
            this.leaderAddress = leaderAddress;
            return this;
        }

        public Builder policy(FencePolicy policy) {
            this.policy = policy;
            return this;
        }

        public Builder why(String why) {
            this.why = why;
            return this;
        }

        public Builder identity(String identity) {
            this.identity = identity;
            return this;
        }

        public Builder permission(String permission) {
            this.permission = permission;
            return this;
        }

        public Builder oldestRevision(long oldestRevision) {
            this.oldestRevision = oldestRevision;
            return this;
        }

        public ErrorFields build() {
            return new ErrorFields(reason, message, field, value, limit, limitValue, sessionId, lock, presentedToken,
                    currentToken, leaderAddress, policy, why, identity, permission, oldestRevision);
        }
    }
}
