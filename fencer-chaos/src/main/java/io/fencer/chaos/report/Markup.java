package io.fencer.chaos.report;

/**
 * Text helpers of the timeline report: escaping for XML and HTML, and numbers written without a locale (a
 * German locale's decimal comma would break SVG coordinates).
 */
final class Markup {
    private Markup() {
    }

    /** Returns {@code text} escaped for XML or HTML character data and quoted attribute values. */
    static String escape(String text) {
        return escape(new StringBuilder(text.length() + 16), text).toString();
    }

    /**
     * Appends {@code text} escaped for XML or HTML character data and quoted attribute values. Characters XML 1.0
     * forbids (most control characters, lone surrogates) become U+FFFD, because one of them in an error string
     * would make the whole picture unreadable.
     */
    static StringBuilder escape(StringBuilder out, String text) {
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            switch (c) {
                case '<' -> out.append("&lt;");
                case '>' -> out.append("&gt;");
                case '&' -> out.append("&amp;");
                case '"' -> out.append("&quot;");
                case '\'' -> out.append("&#39;");
                default -> {
                    if (Character.isHighSurrogate(c) && i + 1 < text.length()
                            && Character.isLowSurrogate(text.charAt(i + 1))) {
                        out.append(c).append(text.charAt(i + 1));
                        i++;
                    } else if (allowedInXml(c)) {
                        out.append(c);
                    } else {
                        out.append('\uFFFD');
                    }
                }
            }
        }
        return out;
    }

    private static boolean allowedInXml(char c) {
        return c == '\t' || c == '\n' || c == '\r' || (c >= 0x20 && c < 0xD800) || (c >= 0xE000 && c <= 0xFFFD);
    }

    /** Returns {@code text} cut to {@code charsMax} characters, an ellipsis marking the cut. */
    static String truncate(String text, int charsMax) {
        if (charsMax < 1) {
            throw new IllegalArgumentException("charsMax must be positive: " + charsMax);
        }
        if (text.length() <= charsMax) {
            return text;
        }
        int end = charsMax - 1;
        if (end > 0 && Character.isHighSurrogate(text.charAt(end - 1))) {
            end--;
        }
        return text.substring(0, end) + "\u2026";
    }

    /** Returns {@code micros} as seconds with six decimals, for example {@code 12.000340}. */
    static String seconds(long micros) {
        long magnitude = Math.abs(micros);
        String fraction = Long.toString(magnitude % 1_000_000);
        return (micros < 0 ? "-" : "") + magnitude / 1_000_000 + "." + "0".repeat(6 - fraction.length()) + fraction;
    }

    /** Appends {@code pixels} rounded to one decimal, without a trailing {@code .0}. */
    static StringBuilder pixels(StringBuilder out, double pixels) {
        long tenths = Math.round(pixels * 10);
        if (tenths < 0) {
            out.append('-');
            tenths = -tenths;
        }
        out.append(tenths / 10);
        if (tenths % 10 != 0) {
            out.append('.').append(tenths % 10);
        }
        return out;
    }
}
