package io.fencer.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.core.InvalidArgumentException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The replicated store's entries in the lock group's log: opaque bytes of level 5, bounded, never applied here. */
class StoreEntryCodecTest {
    private static final byte[] ENTRY = "a store entry".getBytes(StandardCharsets.UTF_8);

    @Test
    void encodeCommands_storeEntryBesideALockCommand_writesVersionFiveAndDecodesEqual() {
        List<Command> batch = List.of(new Command.StoreEntry(ENTRY), new Command.EndLockDelay("orders"));

        byte[] bytes = CommandCodec.encodeCommands(batch);

        assertThat(bytes[0]).isEqualTo((byte) CommandCodec.VERSION);
        assertThat(CommandCodec.decodeCommands(bytes)).isEqualTo(batch);
    }

    @Test
    void decodeCommands_storeEntryInVersionFourBatch_refused() {
        byte[] bytes = CommandCodec.encodeCommands(List.of(new Command.StoreEntry(ENTRY)));
        bytes[0] = (byte) CommandCodec.VERSION_FOUR;

        assertThatThrownBy(() -> CommandCodec.decodeCommands(bytes)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("command tag 15 is not in version 4");
    }

    @Test
    void decodeCommands_storeEntryLengthBeyondTheBytesLeft_refusedBeforeAllocating() {
        byte[] bytes = CommandCodec.encodeCommands(List.of(new Command.StoreEntry(ENTRY)));
        byte[] lying = Arrays.copyOf(bytes, bytes.length);
        int lengthAt = 1 + 4 + 1; // version, count, tag
        lying[lengthAt] = 0x7f;

        assertThatThrownBy(() -> CommandCodec.decodeCommands(lying)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void storeEntry_emptyOrOverTheLimit_refusedNamingTheSize() {
        assertThatThrownBy(() -> new Command.StoreEntry(new byte[0])).isInstanceOf(InvalidArgumentException.class)
                .hasMessageContaining("0 bytes");
        int over = Command.StoreEntry.STORE_ENTRY_BYTES_MAX + 1;
        assertThatThrownBy(() -> new Command.StoreEntry(new byte[over])).isInstanceOf(InvalidArgumentException.class)
                .hasMessageContaining(over + " bytes");
    }

    @Test
    void apply_storeEntryOnTheLockMachineAlone_changesNothingAndAnswersAnEmptyReply() {
        LockStateMachine machine = new LockStateMachine(Limits.DEFAULT);

        Applied applied = machine.apply(new Command.StoreEntry(ENTRY));

        assertThat(applied.result()).isEqualTo(new Result.StoreReply(new byte[0]));
        assertThat(applied.events()).isEmpty();
        assertThat(machine.lockCount()).isZero();
    }

    @Test
    void encodeResults_storeReply_decodesEqual() {
        List<Result> results = List.of(new Result.StoreReply(ENTRY), new Result.StoreReply(new byte[0]));

        assertThat(CommandCodec.decodeResults(CommandCodec.encodeResults(results))).isEqualTo(results);
    }
}
