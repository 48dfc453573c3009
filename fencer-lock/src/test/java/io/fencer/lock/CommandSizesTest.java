package io.fencer.lock;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.core.internal.LockName;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/** The bound on a command's encoded bytes holds for every type at the longest fields its checks allow. */
class CommandSizesTest {
    private static final SecretHash HASH = SecretHash.of("the sizes tests' secret");
    /** 256 bytes of UTF-8 in 128 chars: two bytes a char. */
    private static final String NAME_TWO_BYTES_A_CHAR = "é".repeat(128);
    /** 255 bytes of UTF-8 in 85 chars: three bytes a char, the most for one UTF-16 char. */
    private static final String NAME_THREE_BYTES_A_CHAR = "€".repeat(85);
    /** 256 bytes of UTF-8 in 128 chars: 64 surrogate pairs, four bytes each. */
    private static final String NAME_OF_PAIRS = "😀".repeat(64);
    private static final String ASCII_NAME = "n".repeat(256);
    private static final String REQUEST_ID = "€".repeat(42);
    private static final String IDENTITY = "€".repeat(85);

    @Test
    void encodedBytesMax_ofEveryCommandAtItsLongestFields_boundsItsEncoding() {
        for (String name : List.of(ASCII_NAME, NAME_TWO_BYTES_A_CHAR, NAME_THREE_BYTES_A_CHAR, NAME_OF_PAIRS)) {
            for (Command command : commands(name)) {
                long encoded = CommandCodec.encodeCommands(List.of(command)).length - CommandSizes.BATCH_HEADER_BYTES;

                assertThat(CommandSizes.encodedBytesMax(command)).as("%s", command.getClass().getSimpleName())
                        .isGreaterThanOrEqualTo(encoded).isLessThanOrEqualTo(3 * encoded + 64);
            }
        }
    }

    @Test
    void encodedBytesMax_ofABatch_boundsTheBatch() {
        List<Command> batch = new ArrayList<>();
        for (String name : List.of(ASCII_NAME, NAME_THREE_BYTES_A_CHAR)) {
            batch.addAll(commands(name));
        }

        long bound = CommandSizes.BATCH_HEADER_BYTES + batch.stream().mapToLong(CommandSizes::encodedBytesMax).sum();

        assertThat(bound).isGreaterThanOrEqualTo(CommandCodec.encodeCommands(batch).length);
    }

    private static List<Command> commands(String name) {
        List<LockName> names = IntStream.range(0, Command.AcquireAll.LOCKS_MAX)
                .mapToObj(i -> LockName.of(i + name.substring(name.offsetByCodePoints(0, 2)))).toList();
        return List.of(
                new Command.OpenSession(REQUEST_ID, 1_000, IDENTITY, HASH, IDENTITY),
                new Command.CloseSession(Long.MIN_VALUE, HASH),
                new Command.ExpireSession(Long.MAX_VALUE, true),
                new Command.Acquire(Long.MAX_VALUE, HASH, name, REQUEST_ID, true, io.fencer.core.LockMode.SHARED),
                new Command.CancelWait(1, HASH, name, REQUEST_ID),
                new Command.Release(1, HASH, name, Long.MAX_VALUE),
                new Command.EndLockDelay(name),
                new Command.Revoke(LockName.of(name), Long.MAX_VALUE, IDENTITY, true),
                new Command.CheckpointLeases(Collections.nCopies(Command.CheckpointLeases.CHECKPOINTS_MAX,
                        new Command.LeaseCheckpoint(Long.MAX_VALUE, Long.MAX_VALUE))),
                new Command.SetFormatLevel(LockStateMachine.FORMAT_LEVEL),
                new Command.RaiseFloor(Integer.MAX_VALUE),
                new Command.StoreEntry(new byte[Command.StoreEntry.STORE_ENTRY_BYTES_MAX]),
                new Command.AcquirePermit(1, HASH, name.substring(0, name.length() / 2), Limits.PERMITS_MAX,
                        REQUEST_ID, true),
                new Command.AcquireAll(1, HASH, names, REQUEST_ID, true));
    }
}
