package io.fencer.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.security.MessageDigest;
import java.util.UUID;
import org.junit.jupiter.api.Test;

/** The backup file is refused whole, naming what it is, when it is not the kind a command reads. */
class BackupFileTest {
    private static final Limits LIMITS = new Limits(10, 10, 10, 10, 1_000, 60_000);
    /** Where the kind byte sits: after the magic (8) and the version (2). */
    private static final int KIND_OFFSET = 10;

    @Test
    void read_ofItsOwnWrite_returnsTheContents() throws Exception {
        byte[] file = backup();

        BackupFile.Contents contents = BackupFile.read(file, BackupFile.Kind.BACKUP, "b.fbk", LIMITS);

        assertThat(contents.kind()).isEqualTo(BackupFile.Kind.BACKUP);
        assertThat(contents.appliedIndex()).isEqualTo(42);
    }

    @Test
    void read_ofAStoreBackup_isRefusedNamingTheStoreRestore() throws Exception {
        byte[] file = withKind(backup(), 3);

        assertThatThrownBy(() -> BackupFile.read(file, BackupFile.Kind.BACKUP, "s.fbk", LIMITS))
                .isInstanceOf(BackupFile.BackupFileException.class)
                .hasMessage("s.fbk is a backup of the fenced store (of fencer store backup; restore it with fencer "
                        + "store restore), not a backup (of fencer backup)");
    }

    @Test
    void read_ofAnUnknownKind_isRefusedNamingTheCode() throws Exception {
        byte[] file = withKind(backup(), 9);

        assertThatThrownBy(() -> BackupFile.read(file, BackupFile.Kind.BACKUP, "x.fbk", LIMITS))
                .hasMessageContaining("x.fbk is of an unknown kind (9)");
    }

    private static byte[] backup() {
        return BackupFile.write(new BackupFile.Contents(BackupFile.Kind.BACKUP, 1_000L, new UUID(1, 2), 42,
                BackupFile.stateOf(new LockStateMachine(LIMITS))));
    }

    /** Returns {@code file} with another kind byte and a checksum that matches again (a well-formed file). */
    private static byte[] withKind(byte[] file, int kind) throws Exception {
        byte[] changed = file.clone();
        changed[KIND_OFFSET] = (byte) kind;
        byte[] digest = MessageDigest.getInstance("SHA-256").digest(java.util.Arrays.copyOf(changed,
                changed.length - 32));
        System.arraycopy(digest, 0, changed, changed.length - 32, 32);
        return changed;
    }
}
