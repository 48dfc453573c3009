package io.fencer.server.auth;

import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LockNames;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.Reader;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * The parser of ACL files, the one place that knows their format:
 *
 * <pre>
 *   # comment; blank lines are ignored
 *   IDENTITY  PERMISSION  PREFIX      [# comment]
 *   scheduler lock        jobs/
 *   dashboard read        *
 *   *         read        public/
 *   ops       admin       *
 * </pre>
 *
 * <p>A second kind of line sets a per-identity quota of the lock server (see {@link Quota}) for IDENTITY, in place of
 * the server's option:
 *
 * <pre>
 *   IDENTITY  quota  KIND      NUMBER
 *   batch     quota  sessions  50000
 *   anonymous quota  locks     1000
 * </pre>
 *
 * <p>KIND is {@code sessions}, {@code locks}, {@code waiters}, {@code watchers} or {@code units}; NUMBER is 1 to
 * {@value #QUOTA_MAX}. For quotas, IDENTITY may also be {@code anonymous@ADDRESS}, one anonymous caller's address as
 * errors name it; {@code anonymous} sets the quota of each anonymous address (each its own), and {@code *} of every
 * identity without a line of its own. A quota set twice for one IDENTITY and KIND is refused.
 *
 * <p>Fields are separated by spaces or tabs and contain none. IDENTITY is a client certificate's CN, {@code
 * anonymous} for callers without one, or {@code *} for every identity. PERMISSION is {@code lock}, {@code read},
 * {@code write} or {@code admin} (see {@link Permission}). PREFIX covers every lock name or scope that starts with
 * it, or every name when it is {@code *}. IDENTITY and PREFIX are otherwise checked as lock names are (1 to 256
 * bytes, no control characters). A field that starts with {@code #} begins a comment, so a prefix cannot start with
 * it (a name may contain it elsewhere). An identity whose CN holds a space cannot be named (use {@code *}).
 *
 * <p>Limits, each refused with an error naming it and the value: {@value #LINES_MAX} lines, {@value
 * #LINE_CHARS_MAX} characters per line, {@value #IDENTITIES_MAX} distinct identities. The file is UTF-8. Every
 * error names the file and, when one line is at fault, its number and what is wrong with it.
 */
public final class AclFile {
    /** The most lines a file may have, comments and blank ones included. */
    public static final int LINES_MAX = 10_000;
    /** The longest line, in characters, its line break not included. */
    public static final int LINE_CHARS_MAX = 1_024;
    /** The most distinct identities (other than {@code *}) a file may name. */
    public static final int IDENTITIES_MAX = 1_000;

    /** The largest quota a line may set. */
    public static final int QUOTA_MAX = 100_000_000;

    private static final String FORMAT = "IDENTITY PERMISSION PREFIX";
    private static final int FIELDS = 3;
    private static final String QUOTA = "quota";
    private static final String QUOTA_FORMAT = "IDENTITY quota KIND NUMBER";
    private static final int QUOTA_FIELDS = 4;

    private AclFile() {}

    /**
     * Reads and parses the ACL file at {@code file}.
     *
     * @throws AclFileException when the file cannot be read, is over a limit, or has a malformed line
     */
    public static Acl read(Path file) {
        try (InputStream in = Files.newInputStream(file)) {
            Reader reader = new InputStreamReader(in, StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT).onUnmappableCharacter(CodingErrorAction.REPORT));
            return parse(file.toString(), reader);
        } catch (CharacterCodingException e) {
            throw new AclFileException("ACL file " + file + " is not valid UTF-8", 0, e);
        } catch (IOException e) {
            throw new AclFileException("ACL file " + file + " cannot be read: " + e, 0, e);
        }
    }

    /**
     * Parses an ACL from {@code reader}, naming it {@code source} in errors.
     *
     * @throws AclFileException when the text is over a limit or has a malformed line
     * @throws IOException when {@code reader} fails
     */
    static Acl parse(String source, Reader reader) throws IOException {
        BufferedReader in = new BufferedReader(reader);
        List<Acl.Rule> rules = new ArrayList<>();
        List<Acl.QuotaRule> quotas = new ArrayList<>();
        Set<String> quotasSet = new HashSet<>();
        Set<String> identities = new HashSet<>();
        StringBuilder line = new StringBuilder();
        int lineNumber = 0;
        while (readLine(in, line, source, lineNumber + 1)) {
            lineNumber++;
            if (lineNumber > LINES_MAX) {
                throw new AclFileException("ACL file " + source + " has more than the aclLinesMax of " + LINES_MAX
                        + " lines", lineNumber, null);
            }
            List<String> fields = fieldsBeforeComment(line.toString());
            if (fields.isEmpty()) {
                continue;
            }
            String identity;
            if (fields.size() > 1 && fields.get(1).equals(QUOTA)) {
                Acl.QuotaRule quota = quotaRule(fields, line.toString(), source, lineNumber);
                if (!quotasSet.add(quota.identity() + " " + quota.quota().word())) {
                    throw new AclFileException(at(source, lineNumber) + "sets quota " + quota.quota().word()
                            + " of identity '" + InvalidArgumentException.printable(quota.identity())
                            + "' a second time", lineNumber, null);
                }
                quotas.add(quota);
                identity = quota.identity();
            } else {
                Acl.Rule rule = rule(fields, line.toString(), source, lineNumber);
                rules.add(rule);
                identity = rule.identity();
            }
            if (!identity.equals(Acl.ANY) && identities.add(identity)
                    && identities.size() > IDENTITIES_MAX) {
                throw new AclFileException(at(source, lineNumber) + "names identity " + identities.size()
                        + ", more than the aclIdentitiesMax of " + IDENTITIES_MAX, lineNumber, null);
            }
        }
        return new Acl(rules, quotas);
    }

    /**
     * Reads one line into {@code line}, refusing it as soon as it is longer than {@link #LINE_CHARS_MAX}, so a file
     * without line breaks cannot fill memory. Returns false at the end of the text.
     */
    private static boolean readLine(BufferedReader in, StringBuilder line, String source, int lineNumber)
            throws IOException {
        line.setLength(0);
        int c = in.read();
        if (c < 0) {
            return false;
        }
        while (c >= 0 && c != '\n') {
            if (c == '\r' && endsLine(in)) {
                break;
            }
            if (line.length() == LINE_CHARS_MAX) {
                throw new AclFileException(at(source, lineNumber) + "is longer than the aclLineCharsMax of "
                        + LINE_CHARS_MAX + " characters", lineNumber, null);
            }
            line.append((char) c);
            c = in.read();
        }
        return true;
    }

    /** Returns whether the {@code \r} just read ends its line (a {@code \n} or the end follows), consuming it. */
    private static boolean endsLine(BufferedReader in) throws IOException {
        in.mark(1);
        int next = in.read();
        if (next == '\n' || next < 0) {
            return true;
        }
        in.reset();
        return false;
    }

    /** Returns the quota a {@code IDENTITY quota KIND NUMBER} line sets. */
    private static Acl.QuotaRule quotaRule(List<String> fields, String line, String source, int lineNumber) {
        if (fields.size() != QUOTA_FIELDS) {
            throw new AclFileException(at(source, lineNumber) + "has " + fields.size() + " fields, expected "
                    + QUOTA_FORMAT + ": '" + InvalidArgumentException.printable(line) + "'", lineNumber, null);
        }
        String identity = fields.get(0);
        checkName(identity, "identity", source, lineNumber);
        Quota quota = Quota.ofWord(fields.get(2)).orElseThrow(() -> new AclFileException(at(source, lineNumber)
                + "has unknown quota '" + InvalidArgumentException.printable(fields.get(2))
                + "': expected sessions, locks, waiters, watchers or units", lineNumber, null));
        long value;
        try {
            value = Long.parseLong(fields.get(3));
        } catch (NumberFormatException e) {
            value = -1;
        }
        if (value < 1 || value > QUOTA_MAX) {
            throw new AclFileException(at(source, lineNumber) + "sets quota " + quota.word() + " to '"
                    + InvalidArgumentException.printable(fields.get(3)) + "': expected a number from 1 to "
                    + QUOTA_MAX, lineNumber, null);
        }
        return new Acl.QuotaRule(identity, quota, (int) value);
    }

    /** Returns the rule of one {@code IDENTITY PERMISSION PREFIX} line. */
    private static Acl.Rule rule(List<String> fields, String line, String source, int lineNumber) {
        if (fields.size() != FIELDS) {
            throw new AclFileException(at(source, lineNumber) + "has " + fields.size() + " fields, expected "
                    + FORMAT + ": '" + InvalidArgumentException.printable(line) + "'", lineNumber, null);
        }
        String identity = fields.get(0);
        Permission permission = Permission.ofWord(fields.get(1)).orElseThrow(() -> new AclFileException(
                at(source, lineNumber) + "has unknown permission '"
                        + InvalidArgumentException.printable(fields.get(1)) + "': expected lock, read, write or admin",
                lineNumber, null));
        String prefix = fields.get(2);
        checkName(identity, "identity", source, lineNumber);
        if (!prefix.equals(Acl.ANY)) {
            checkName(prefix, "prefix", source, lineNumber);
        }
        return new Acl.Rule(identity, permission, prefix);
    }

    /** Returns the fields of a line up to the first that starts with {@code #}, which begins a comment. */
    private static List<String> fieldsBeforeComment(String line) {
        List<String> fields = new ArrayList<>(FIELDS);
        for (String field : line.split("[ \\t]+")) {
            if (field.startsWith("#")) {
                break;
            }
            if (!field.isEmpty()) {
                fields.add(field);
            }
        }
        return fields;
    }

    /** Checks an identity or a prefix as lock names are checked: 1 to 256 bytes of UTF-8, no control characters. */
    private static void checkName(String name, String field, String source, int lineNumber) {
        try {
            LockNames.check(field, name);
        } catch (InvalidArgumentException e) {
            throw new AclFileException(at(source, lineNumber) + "has an invalid " + field.toUpperCase(Locale.ROOT)
                    + ": " + e.getMessage(), lineNumber, e);
        }
    }

    private static String at(String source, int lineNumber) {
        return "ACL file " + source + " line " + lineNumber + " ";
    }
}
