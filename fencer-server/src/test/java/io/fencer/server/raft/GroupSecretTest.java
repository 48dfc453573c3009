package io.fencer.server.raft;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assumptions.assumeThat;

import com.sun.security.auth.module.UnixSystem;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The group secret's file: made atomically and owner-only, read back, refused with a clear error when malformed. */
class GroupSecretTest {
    @TempDir
    Path directory;

    @Test
    void readOrCreate_absentFile_makesAnOwnerOnlyFileOfTheDocumentedFormatAndReusesIt() throws Exception {
        Path file = directory.resolve("raft.secret");

        GroupSecret.Loaded made = GroupSecret.readOrCreate(file);
        GroupSecret.Loaded again = GroupSecret.readOrCreate(file);

        assertThat(made.created()).isTrue();
        assertThat(again.created()).as("the second start reads the file").isFalse();
        assertThat(again.secret()).isEqualTo(made.secret());
        assertThat(again.warning()).isNull();
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(file))).isEqualTo("rw-------");
        List<String> lines = Files.readAllLines(file);
        assertThat(lines).hasSize(2);
        assertThat(lines.get(0)).isEqualTo("fencer-raft-secret v1");
        assertThat(Base64.getDecoder().decode(lines.get(1))).hasSize(32);
        assertThat(directory).as("no temporary file is left").isDirectoryNotContaining("glob:**.tmp");
    }

    @Test
    void readOrCreate_manyProcessesAtOnceOnOnePath_endWithOneSecret() throws Exception {
        Path file = directory.resolve("shared.secret");
        int starters = 8;
        ExecutorService pool = Executors.newFixedThreadPool(starters);
        CountDownLatch go = new CountDownLatch(1);
        try {
            List<Future<GroupSecret.Loaded>> loads = new ArrayList<>();
            for (int i = 0; i < starters; i++) {
                loads.add(pool.submit(() -> {
                    go.await();
                    return GroupSecret.readOrCreate(file);
                }));
            }
            go.countDown();
            List<GroupSecret.Loaded> loaded = new ArrayList<>();
            for (Future<GroupSecret.Loaded> load : loads) {
                loaded.add(load.get(30, TimeUnit.SECONDS));
            }

            assertThat(loaded).filteredOn(GroupSecret.Loaded::created).as("the one that made the file").hasSize(1);
            assertThat(loaded).extracting(GroupSecret.Loaded::secret).containsOnly(GroupSecret.read(file));
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void readOrCreate_fileWritableByOthers_isRefusedNamingTheFix() throws Exception {
        Path file = directory.resolve("raft.secret");
        GroupSecret.readOrCreate(file);
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-r--rw-"));

        assertThatThrownBy(() -> GroupSecret.readOrCreate(file)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(file + " may be written by others (rw-r--rw-)").hasMessageContaining("chmod 600");
    }

    /** Whoever may write the secret's directory may delete the file and put another in its place. */
    @Test
    void readOrCreate_directoryWritableByOthers_isRefusedNamingItAndItsMode() throws Exception {
        Path shared = Files.createDirectory(directory.resolve("shared"));
        Path file = shared.resolve("raft.secret");
        GroupSecret.readOrCreate(file);
        Files.setPosixFilePermissions(shared, PosixFilePermissions.fromString("rwxrwxrwx"));

        assertThatThrownBy(() -> GroupSecret.readOrCreate(file)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("the group secret file " + file + " is in the directory " + shared + ", which "
                        + "others may write (rwxrwxrwx): whoever may write it may replace the secret")
                .hasMessageContaining("chmod o-w " + shared);
    }

    /** A umask of 002 makes such directories by accident: the secret is used, and the log says what to fix. */
    @Test
    void readOrCreate_directoryWritableByItsGroup_isUsedWithAWarningNamingItAndItsMode() throws Exception {
        Path shared = Files.createDirectory(directory.resolve("shared"));
        Path file = shared.resolve("raft.secret");
        GroupSecret made = GroupSecret.readOrCreate(file).secret();
        Files.setPosixFilePermissions(shared, PosixFilePermissions.fromString("rwxrwxr-x"));

        GroupSecret.Loaded loaded = GroupSecret.readOrCreate(file);

        assertThat(loaded.secret()).isEqualTo(made);
        assertThat(loaded.warning()).contains("the group secret file " + file + " is in the directory " + shared
                + ", which its group may write (rwxrwxr-x)", "chmod g-w " + shared);
    }

    @Test
    void readOrCreate_absentFileInADirectoryWritableByOthers_isRefusedAndNothingIsMade() throws Exception {
        Path shared = Files.createDirectory(directory.resolve("shared"));
        Files.setPosixFilePermissions(shared, PosixFilePermissions.fromString("rwxrwxrwx"));
        Path file = shared.resolve("raft.secret");

        assertThatThrownBy(() -> GroupSecret.readOrCreate(file)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("is in the directory " + shared + ", which others may write (rwxrwxrwx)");
        assertThat(shared).isEmptyDirectory();
    }

    /** The layout above the secret's own directory is the machine's: a server does not stop over it. */
    @Test
    void readOrCreate_ancestorWritableByOthers_isUsed() throws Exception {
        Path shared = Files.createDirectory(directory.resolve("shared"));
        Path own = Files.createDirectory(shared.resolve("own"));
        Path file = own.resolve("raft.secret");
        GroupSecret made = GroupSecret.readOrCreate(file).secret();
        Files.setPosixFilePermissions(shared, PosixFilePermissions.fromString("rwxrwxrwx"));

        GroupSecret.Loaded loaded = GroupSecret.readOrCreate(file);

        assertThat(loaded.secret()).isEqualTo(made);
        assertThat(loaded.warning()).isNull();
    }

    /** In a directory with the sticky bit only a file's owner may delete or rename it: the file cannot be replaced. */
    @Test
    void readOrCreate_stickyDirectoryWritableByAll_isUsed() throws Exception {
        Path shared = Files.createDirectory(directory.resolve("shared"));
        Files.setAttribute(shared, "unix:mode", 01777);
        Path file = shared.resolve("raft.secret");

        GroupSecret made = GroupSecret.readOrCreate(file).secret();
        GroupSecret.Loaded again = GroupSecret.readOrCreate(file);

        assertThat(again.secret()).isEqualTo(made);
        assertThat(again.warning()).isNull();
    }

    @Test
    void readOrCreate_directoryOfAnotherUser_isUsedWithAWarningNamingItsOwner() throws Exception {
        Path theirs = Files.createDirectory(directory.resolve("theirs"));
        Path file = theirs.resolve("raft.secret");
        GroupSecret.readOrCreate(file);
        UserPrincipal nobody = file.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName("nobody");
        Files.setOwner(theirs, nobody); // the tests run as root, who may give a directory away

        assertThat(GroupSecret.readOrCreate(file).warning()).contains("the group secret file " + file
                + " is in the directory " + theirs + ", which belongs to nobody (uid 65534), not to "
                + System.getProperty("user.name") + " (uid 0) or root");
    }

    /**
     * Regression: owners were compared by user name, and a container's user without a name (the JDK's
     * {@code user.name} is then {@code ?}) was refused the secret file it had made itself. Owners are now compared by
     * uid. The tests run as root; the JDK's name of a uid without one is set here, the uid is the process's own.
     */
    @Test
    void readOrCreate_fileOfThisProcesssUidWhoseUserHasNoName_isUsed() throws Exception {
        Path file = directory.resolve("raft.secret");
        GroupSecret made = GroupSecret.readOrCreate(file).secret();
        String name = System.getProperty("user.name");
        System.setProperty("user.name", "?");
        try {
            GroupSecret.Loaded again = GroupSecret.readOrCreate(file);

            assertThat(again.secret()).isEqualTo(made);
            assertThat(again.warning()).isNull();
        } finally {
            System.setProperty("user.name", name);
        }
    }

    /**
     * A file of a uid that has no name, nor is this process's, is refused naming the uid. Only root may give a file
     * away: as another user this case is skipped (the tests run as root in CI, where it runs).
     */
    @Test
    void readOrCreate_fileOfAnotherUidWithoutAName_isRefusedNamingIt() throws Exception {
        assumeThat(new UnixSystem().getUid()).as("only root may give a file to another uid").isZero();
        Path file = directory.resolve("raft.secret");
        GroupSecret.readOrCreate(file);
        Files.setAttribute(file, "unix:uid", 54_321);

        assertThatThrownBy(() -> GroupSecret.readOrCreate(file)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(file + " belongs to 54321, not to " + System.getProperty("user.name")
                        + " (uid 0) who runs this server");
    }

    /**
     * A directory of a uid without a name is another user's (a warning), and one of root's uid is not, whatever the
     * process's user is called. As another user than root this case is skipped, as above.
     */
    @Test
    void readOrCreate_directoryOfAnotherUidWithoutAName_isUsedWithAWarningNamingTheUid() throws Exception {
        assumeThat(new UnixSystem().getUid()).as("only root may give a directory to another uid").isZero();
        Path theirs = Files.createDirectory(directory.resolve("theirs"));
        Path file = theirs.resolve("raft.secret");
        GroupSecret.readOrCreate(file);
        Files.setAttribute(theirs, "unix:uid", 54_321);

        assertThat(GroupSecret.readOrCreate(file).warning()).contains("the group secret file " + file
                + " is in the directory " + theirs + ", which belongs to 54321, not to");
    }

    @Test
    void readOrCreate_fileOfAnotherUser_isRefusedNamingBoth() throws Exception {
        Path file = directory.resolve("raft.secret");
        GroupSecret.readOrCreate(file);
        UserPrincipal nobody = file.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName("nobody");
        Files.setOwner(file, nobody); // the tests run as root, who may give a file away

        assertThatThrownBy(() -> GroupSecret.readOrCreate(file)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(file + " belongs to nobody (uid 65534), not to "
                        + System.getProperty("user.name") + " (uid 0)");
    }

    @Test
    void readOrCreate_fileReadableByOthers_isUsedWithAWarningNamingTheFix() throws Exception {
        Path file = directory.resolve("open.secret");
        GroupSecret made = GroupSecret.readOrCreate(file).secret();
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-r--r--"));

        GroupSecret.Loaded loaded = GroupSecret.readOrCreate(file);

        assertThat(loaded.secret()).isEqualTo(made);
        assertThat(loaded.warning()).contains(file.toString(), "rw-r--r--", "chmod 600");
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
        "wrong first line | not-a-secret\\nc2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0c2VjcmV0MTI=\\n"
                + " | its first line is not 'fencer-raft-secret v1'",
        "a later version | fencer-raft-secret v2\\nAAAA\\n | names version 'v2', which this release does not read",
        "not base64 | fencer-raft-secret v1\\n%%%not base64%%%\\n | has a second line that is not base64",
        "too short | fencer-raft-secret v1\\nc2hvcnQ=\\n | has 5 bytes, outside [32, 1024]",
        "three lines | fencer-raft-secret v1\\nAAAA\\nAAAA\\n | has 3 lines, not 2",
    })
    void read_malformedFile_isRefusedNamingTheFileButNeverItsContent(String name, String text, String fault)
            throws Exception {
        Path file = directory.resolve("bad.secret");
        Files.writeString(file, text.replace("\\n", "\n"), StandardCharsets.UTF_8);

        assertThatThrownBy(() -> GroupSecret.readOrCreate(file)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(file.toString()).hasMessageContaining(fault)
                .satisfies(error -> assertThat(error.getMessage()).doesNotContain("c2Vj", "not base64%", "AAAA"));
    }

    @Test
    void readOrCreate_directoryMissing_saysSo() {
        Path file = directory.resolve("absent").resolve("raft.secret");

        assertThatThrownBy(() -> GroupSecret.readOrCreate(file)).hasMessageContaining("does not exist")
                .hasMessageContaining(directory.resolve("absent").toString());
    }

    @Test
    void ofAndToString_checkTheLengthAndNeverShowTheBytes() {
        byte[] bytes = "0123456789abcdef0123456789abcdef".getBytes(StandardCharsets.US_ASCII);

        assertThat(GroupSecret.of(bytes).toString()).isEqualTo("GroupSecret[32 bytes]");
        assertThat(GroupSecret.of(bytes)).isEqualTo(GroupSecret.of(bytes.clone()));
        assertThatThrownBy(() -> GroupSecret.of(new byte[31])).hasMessage("a group secret has 31 bytes, outside "
                + "[32, 1024]");
    }
}
