package io.fencer.server.auth;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.StringReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The ACL file's format, its limits, and what its rules allow. */
class AclFileTest {
    @TempDir
    Path directory;

    @Test
    void parse_commentsBlankLinesWildcardsAndTrailingComments_allowExactlyWhatTheRulesGrant() throws IOException {
        Acl acl = parse("""
                # operators
                ops\tadmin *

                scheduler   lock jobs/   # its own locks
                *           read public/
                writer      write db/
                """);

        assertThat(acl.ruleCount()).isEqualTo(4);
        assertThat(acl.identityCount()).isEqualTo(3);
        assertThat(acl.allows("scheduler", Permission.LOCK, "jobs/a")).isTrue();
        assertThat(acl.allows("scheduler", Permission.LOCK, "jobs")).as("a prefix, not a directory").isFalse();
        assertThat(acl.allows("scheduler", Permission.LOCK, "other")).isFalse();
        assertThat(acl.allows("scheduler", Permission.READ, "jobs/a")).as("lock does not include read").isFalse();
        assertThat(acl.allows("scheduler", Permission.READ, "public/x")).as("any identity").isTrue();
        assertThat(acl.allows("anonymous", Permission.READ, "public/x")).isTrue();
        assertThat(acl.allows("anonymous", Permission.LOCK, "public/x")).isFalse();
        assertThat(acl.allows("writer", Permission.READ, "db/t")).as("write includes read").isTrue();
        assertThat(acl.allows("writer", Permission.ADMIN, "db/t")).isFalse();
        assertThat(acl.allows("ops", Permission.ADMIN, "anything")).isTrue();
        assertThat(acl.allows("ops", Permission.LOCK, "jobs/a")).as("admin includes everything").isTrue();
        assertThat(acl.allowsSomewhere("scheduler", Permission.LOCK)).isTrue();
        assertThat(acl.allowsSomewhere("writer", Permission.LOCK)).isFalse();
        assertThat(acl.allowsSomewhere("ops", Permission.LOCK)).isTrue();
    }

    @Test
    void parse_quotaLines_setQuotasByIdentityThenAnonymousThenAnyIdentity() throws IOException {
        Acl acl = parse("""
                ops                   admin *
                batch                 quota sessions 50000   # its many workers
                anonymous             quota locks    100
                anonymous@10.0.0.7    quota locks    5
                *                     quota waiters  20
                console               quota watchers 300
                """);

        assertThat(acl.ruleCount()).as("quota lines are no permission rules").isEqualTo(1);
        assertThat(acl.quota("batch", Quota.SESSIONS)).hasValue(50_000);
        assertThat(acl.quota("batch", Quota.LOCKS)).as("not set for batch, nor for any identity").isEmpty();
        assertThat(acl.quota("anonymous@10.0.0.8", Quota.LOCKS)).as("each anonymous address").hasValue(100);
        assertThat(acl.quota("anonymous@10.0.0.7", Quota.LOCKS)).as("one address's own line").hasValue(5);
        assertThat(acl.quota("ops", Quota.LOCKS)).as("a named identity is not anonymous").isEmpty();
        assertThat(acl.quota("ops", Quota.WAITERS)).as("any identity").hasValue(20);
        assertThat(acl.quota("console", Quota.WATCHERS)).hasValue(300);
        assertThat(acl.allowsSomewhere("batch", Permission.LOCK)).as("a quota grants no permission").isFalse();
    }

    @Test
    void parse_malformedQuotaLines_failNamingTheLine() {
        assertRefused("batch quota sessions\n", 1, "has 3 fields, expected IDENTITY quota KIND NUMBER");
        assertRefused("batch quota minutes 5\n", 1,
                "unknown quota 'minutes': expected sessions, locks, waiters, watchers or units");
        assertRefused("batch quota locks 0\n", 1, "sets quota locks to '0': expected a number from 1 to 100000000");
        assertRefused("batch quota locks lots\n", 1, "sets quota locks to 'lots'");
        assertRefused("batch quota locks 5\nbatch quota locks 6\n", 2,
                "sets quota locks of identity 'batch' a second time");
    }

    @Test
    void parse_emptyFile_allowsNothing() throws IOException {
        Acl acl = parse("# nobody yet\n");

        assertThat(acl.ruleCount()).isZero();
        assertThat(acl.allows("ops", Permission.READ, "x")).isFalse();
        assertThat(acl.allowsSomewhere("ops", Permission.LOCK)).isFalse();
    }

    @Test
    void parse_malformedLines_failNamingSourceLineAndWhatIsWrong() {
        assertRefused("ops admin *\nops admin\n", 2, "test.acl line 2 has 2 fields, expected IDENTITY PERMISSION "
                + "PREFIX: 'ops admin'");
        assertRefused("ops admin * extra\n", 1, "test.acl line 1 has 4 fields");
        assertRefused("\n\nops rwx *\n", 3, "test.acl line 3 has unknown permission 'rwx': expected lock, read, "
                + "write or admin");
        assertRefused("ops Admin *\n", 1, "unknown permission 'Admin'");
        assertRefused("ops read " + "p".repeat(257) + "\n", 1, "test.acl line 1 has an invalid PREFIX");
        assertRefused("ops read jobs\u0001/\n", 1, "has an invalid PREFIX: prefix name must not contain control");
        assertRefused("op\u0007s read jobs/\n", 1, "has an invalid IDENTITY");
    }

    @Test
    void parse_overEveryLimit_failsNamingTheLimitAndItsValue() {
        assertRefused("ops read " + "p".repeat(AclFile.LINE_CHARS_MAX) + "\n", 1,
                "test.acl line 1 is longer than the aclLineCharsMax of 1024 characters");
        assertRefused("# line\n".repeat(AclFile.LINES_MAX) + "ops read *\n", AclFile.LINES_MAX + 1,
                "test.acl has more than the aclLinesMax of 10000 lines");
        StringBuilder identities = new StringBuilder();
        for (int index = 0; index <= AclFile.IDENTITIES_MAX; index++) {
            identities.append("client-").append(index).append(" read *\n");
        }
        assertRefused(identities.toString(), AclFile.IDENTITIES_MAX + 1,
                "test.acl line 1001 names identity 1001, more than the aclIdentitiesMax of 1000");
    }

    @Test
    void parse_atEveryLimit_isAccepted() throws IOException {
        String longest = "ops read jobs/ #" + "p".repeat(AclFile.LINE_CHARS_MAX - "ops read jobs/ #".length());
        StringBuilder text = new StringBuilder(longest).append("\r\n");
        for (int index = 1; index < AclFile.IDENTITIES_MAX; index++) {
            text.append("client-").append(index).append(" read *\n");
        }
        text.append("# filler\n".repeat(AclFile.LINES_MAX - AclFile.IDENTITIES_MAX));

        Acl acl = parse(text.toString());

        assertThat(acl.identityCount()).isEqualTo(AclFile.IDENTITIES_MAX);
        assertThat(acl.allows("ops", Permission.READ, "jobs/a")).isTrue();
        assertThat(acl.allows("client-999", Permission.READ, "x")).isTrue();
    }

    @Test
    void read_missingOrInvalidUtf8File_failsNamingTheFile() throws IOException {
        Path missing = directory.resolve("missing.acl");
        Path binary = directory.resolve("binary.acl");
        Files.write(binary, new byte[] {'o', 'p', 's', ' ', (byte) 0xC3, (byte) 0x28, '\n'});
        Path fine = directory.resolve("fine.acl");
        Files.writeString(fine, "ops admin *\n", StandardCharsets.UTF_8);

        assertThatThrownBy(() -> AclFile.read(missing)).isInstanceOf(AclFileException.class)
                .hasMessageStartingWith("ACL file " + missing + " cannot be read");
        assertThatThrownBy(() -> AclFile.read(binary)).isInstanceOf(AclFileException.class)
                .hasMessage("ACL file " + binary + " is not valid UTF-8");
        assertThat(AclFile.read(fine).allows("ops", Permission.WRITE, "x")).isTrue();
    }

    private static Acl parse(String text) throws IOException {
        return AclFile.parse("test.acl", new StringReader(text));
    }

    private static void assertRefused(String text, int line, String message) {
        assertThatThrownBy(() -> parse(text)).isInstanceOf(AclFileException.class)
                .hasMessageStartingWith("ACL file ").hasMessageContaining(message)
                .satisfies(error -> assertThat(((AclFileException) error).line()).isEqualTo(line));
    }
}
