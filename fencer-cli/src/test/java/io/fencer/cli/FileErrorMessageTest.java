package io.fencer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A command that fails on a file says which file and why: the JDK's NoSuchFileException and its kin carry the path
 * alone as their message, and "fencer: backups/b.bak" told an operator nothing of what was wrong with it.
 */
class FileErrorMessageTest {
    @Test
    void keygen_outInAMissingDirectory_namesTheFileAndSaysItDoesNotExist(@TempDir Path dir) {
        Path out = dir.resolve("missing").resolve("token.key");

        CommandRun run = CommandRun.run("keygen", "--out", out.toString());

        assertThat(run.exitCode()).isEqualTo(1);
        assertThat(run.err()).startsWith("fencer: " + out + ": no such file or directory");
    }

    @Test
    void restore_missingBackupFile_namesTheFileAndSaysItDoesNotExist(@TempDir Path dir) {
        Path backup = dir.resolve("nightly.bak");

        CommandRun run = CommandRun.run("restore", backup.toString(), "--data", dir.resolve("data").toString());

        assertThat(run.exitCode()).isEqualTo(1);
        assertThat(run.err()).startsWith("fencer: " + backup + ": no such file or directory");
    }
}
