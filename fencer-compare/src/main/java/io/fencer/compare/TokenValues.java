package io.fencer.compare;

import io.etcd.jetcd.ByteSequence;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

/**
 * Fencing tokens as etcd values. etcd compares values as byte strings, so a token is written as a decimal of a fixed
 * width, zero-padded: then the bytes order as the numbers do, and the value stays readable with {@code etcdctl get}.
 */
final class TokenValues {
    /** Digits of {@link Long#MAX_VALUE}: every token that is not negative fits. */
    static final int WIDTH = 19;

    private TokenValues() {}

    /** Returns {@code token} as its fixed-width value; fails for a negative token, which etcd revisions never are. */
    static ByteSequence encode(long token) {
        if (token < 0) {
            throw new IllegalArgumentException("token " + token + " is negative");
        }
        return ByteSequence.from(String.format(Locale.ROOT, "%0" + WIDTH + "d", token), StandardCharsets.US_ASCII);
    }

    /** Returns the token that {@link #encode} wrote as {@code value}. */
    static long decode(ByteSequence value) {
        String text = value.toString(StandardCharsets.US_ASCII);
        if (text.length() != WIDTH || !text.chars().allMatch(c -> c >= '0' && c <= '9')) {
            throw new IllegalArgumentException("not a token value of " + WIDTH + " digits: '" + text + "'");
        }
        return Long.parseLong(text);
    }
}
