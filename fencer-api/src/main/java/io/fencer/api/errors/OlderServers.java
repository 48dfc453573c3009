package io.fencer.api.errors;

import io.fencer.core.internal.ErrorFields;
import io.fencer.core.ErrorReason;
import io.fencer.core.FencePolicy;
import io.fencer.core.FencingToken;
import io.fencer.core.InvalidArgumentException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Fills in the fields a server older than {@code ErrorDetail.policy} and {@code why} left out of its details,
 * from the sentence core formatted: the policy of a STALE_TOKEN, the token of a SCOPE_MISMATCH, the clause (and
 * the token, when the detail lacks it) of a BAD_TOKEN_SIGNATURE, and the last token of a TOKEN_EXHAUSTED, which
 * such a server only ever reported at the maximum. A current server's fields pass unchanged.
 *
 * <p>Only the client path needs this, and only while servers of that age may answer: the fields it reads from
 * the sentence are all sent as fields now.
 */
final class OlderServers {
    /** The token a core exception's sentence begins with: {@code token orders#32 ...}. */
    private static final Pattern SENTENCE_TOKEN = Pattern.compile("^token (.+?)#(\\d{1,19}) ");
    private static final String SIGNATURE_REFUSED = " refused: ";

    private OlderServers() {}

    /** Returns {@code fields} with what an older server did not send read from its sentence. */
    static ErrorFields complete(ErrorFields fields) {
        return switch (fields.reason()) {
            case STALE_TOKEN -> fields.policy() != null ? fields
                    : fields.toBuilder().policy(sentencePolicy(fields.message())).build();
            case SCOPE_MISMATCH -> !fields.value().isEmpty() && fields.presentedToken() != FencingToken.NONE ? fields
                    : scopeMismatch(fields);
            case TOKEN_EXHAUSTED -> fields.currentToken() != FencingToken.NONE ? fields
                    // Exhausted means the counter reached the maximum, whether or not the detail says which value.
                    : fields.toBuilder().currentToken(FencingToken.VALUE_MAX).build();
            case BAD_TOKEN_SIGNATURE -> fields.why().isEmpty() ? badSignature(fields) : fields;
            default -> fields;
        };
    }

    private static FencePolicy sentencePolicy(String message) {
        return message.contains("policy " + FencePolicy.STRICT) ? FencePolicy.STRICT : FencePolicy.AT_LEAST;
    }

    private static ErrorFields scopeMismatch(ErrorFields fields) {
        FencingToken token = sentenceToken(fields.message());
        if (token == null) {
            // Neither detail nor sentence names the token: keep the server's sentence rather than invent one.
            return ErrorFields.builder(ErrorReason.INTERNAL)
                    .message("scope mismatch without a token named: " + fields.message()).build();
        }
        return fields.toBuilder().value(token.lock()).presentedToken(token.value()).build();
    }

    private static ErrorFields badSignature(ErrorFields fields) {
        String message = fields.message();
        FencingToken token = sentenceToken(message);
        String lock = !fields.lock().isEmpty() ? fields.lock() : token == null ? "" : token.lock();
        long value = fields.presentedToken() != FencingToken.NONE ? fields.presentedToken()
                : token == null ? FencingToken.NONE : token.value();
        int refused = message.indexOf(SIGNATURE_REFUSED);
        String why = token != null && refused >= 0 ? message.substring(refused + SIGNATURE_REFUSED.length()) : message;
        return fields.toBuilder().lock(lock).presentedToken(value).why(why).build();
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
}
