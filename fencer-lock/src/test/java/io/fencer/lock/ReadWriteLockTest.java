package io.fencer.lock;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.core.FencingToken;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LockMode;
import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Read-write locks in the state machine: shared holders overlap, FIFO without writer starvation. */
class ReadWriteLockTest {
    private static final SecretHash HASH = SecretHash.of("the tests' session secret");
    private LockStateMachine machine = new LockStateMachine(Limits.DEFAULT);

    private Applied apply(Command command) {
        Applied applied = machine.apply(command);
        machine.checkInvariants();
        return applied;
    }

    private long open() {
        return ((Result.SessionOpened) apply(new Command.OpenSession("", 10_000, "tester", HASH)).result())
                .sessionId();
    }

    private Result shared(long session, String request) {
        return apply(new Command.Acquire(session, HASH, "db", request, true, LockMode.SHARED)).result();
    }

    private Result exclusive(long session, String request) {
        return apply(new Command.Acquire(session, HASH, "db", request, true, LockMode.EXCLUSIVE)).result();
    }

    private static FencingToken token(Result result) {
        return ((Result.Granted) result).token();
    }

    @Test
    void acquireShared_twoReaders_overlapEachWithAFreshSharedToken() {
        FencingToken first = token(shared(open(), "r1"));
        FencingToken second = token(shared(open(), "r2"));

        assertThat(first).isEqualTo(new FencingToken("db", 1, LockMode.SHARED));
        assertThat(second).isEqualTo(new FencingToken("db", 2, LockMode.SHARED));
        assertThat(machine.describe("db").orElseThrow().sharedHolders()).extracting(LockView.SharedHolderView::token)
                .containsExactly(first, second);
        assertThat(machine.validate(first).status()).isEqualTo(Validation.Status.CURRENT);
        assertThat(machine.validate(first.withMode(LockMode.EXCLUSIVE)).status())
                .isNotEqualTo(Validation.Status.CURRENT);
    }

    @Test
    void acquireShared_behindAQueuedWriter_waitsSoTheWriterIsNotStarved() {
        long reader = open();
        long writer = open();
        long lateReader = open();
        FencingToken read = token(shared(reader, "r1"));
        assertThat(exclusive(writer, "w")).isEqualTo(new Result.Queued("db", 0));
        assertThat(shared(lateReader, "r2")).isEqualTo(new Result.Queued("db", 1));

        Applied released = apply(new Command.Release(reader, HASH, "db", read.value()));

        FencingToken write = new FencingToken("db", 2);
        assertThat(released.result()).isEqualTo(new Result.Released(read, write));
        assertThat(released.events()).contains(new Event.Granted(writer, "w", write, "tester"));
        assertThat(machine.describe("db").orElseThrow().waiters()).extracting(LockView.WaiterView::mode)
                .containsExactly(LockMode.SHARED);

        Applied writerDone = apply(new Command.Release(writer, HASH, "db", 2));
        assertThat(writerDone.events()).contains(new Event.Granted(lateReader, "r2",
                new FencingToken("db", 3, LockMode.SHARED), "tester"));
    }

    @Test
    void release_ofExclusive_grantsEveryReaderQueuedBeforeTheNextWriter() {
        long writer = open();
        long readerOne = open();
        long readerTwo = open();
        long secondWriter = open();
        long readerThree = open();
        token(exclusive(writer, "w1"));
        shared(readerOne, "r1");
        shared(readerTwo, "r2");
        exclusive(secondWriter, "w2");
        shared(readerThree, "r3");

        Applied released = apply(new Command.Release(writer, HASH, "db", 1));

        assertThat(released.events()).filteredOn(Event.Granted.class::isInstance).containsExactly(
                new Event.Granted(readerOne, "r1", new FencingToken("db", 2, LockMode.SHARED), "tester"),
                new Event.Granted(readerTwo, "r2", new FencingToken("db", 3, LockMode.SHARED), "tester"));
        assertThat(machine.describe("db").orElseThrow().waiters()).extracting(LockView.WaiterView::sessionId)
                .containsExactly(secondWriter, readerThree);
    }

    @Test
    void cancelWait_ofTheWriterHoldingReadersBack_grantsTheReadersBehindIt() {
        long reader = open();
        long writer = open();
        long lateReader = open();
        shared(reader, "r1");
        exclusive(writer, "w");
        shared(lateReader, "r2");

        Applied cancelled = apply(new Command.CancelWait(writer, HASH, "db", "w"));

        assertThat(cancelled.result()).isEqualTo(new Result.WaitCancelled(true));
        assertThat(cancelled.events()).containsExactly(new Event.WaitCancelled(writer, "db"),
                new Event.Granted(lateReader, "r2", new FencingToken("db", 2, LockMode.SHARED), "tester"));
    }

    @Test
    void expireSession_ofAQueuedWriter_grantsTheReadersBehindIt() {
        long reader = open();
        long writer = open();
        long lateReader = open();
        shared(reader, "r1");
        exclusive(writer, "w");
        shared(lateReader, "r2");

        Applied expired = apply(new Command.ExpireSession(writer, true));

        assertThat(expired.events()).contains(new Event.Granted(lateReader, "r2",
                new FencingToken("db", 2, LockMode.SHARED), "tester"));
    }

    @Test
    void expireSession_ofAReaderWithLockDelay_delaysNothingAndGrantsTheWriterWhenTheLastReaderLeaves() {
        long reader = open();
        long otherReader = open();
        long writer = open();
        shared(reader, "r1");
        FencingToken other = token(shared(otherReader, "r2"));
        exclusive(writer, "w");

        Applied expired = apply(new Command.ExpireSession(reader, true));
        assertThat(expired.events()).noneMatch(Event.LockDelayStarted.class::isInstance);
        assertThat(machine.delayedLocks()).isEmpty();

        Applied released = apply(new Command.Release(otherReader, HASH, "db", other.value()));
        assertThat(released.result()).isEqualTo(new Result.Released(other, new FencingToken("db", 3)));
    }

    @Test
    void acquire_inTheOtherModeThanHeld_isRefusedNamingBothModes() {
        long session = open();
        shared(session, "r1");

        Result result = exclusive(session, "w");

        assertThat(result).isInstanceOfSatisfying(Result.Rejected.class, rejected -> assertThat(rejected.error())
                .isInstanceOfSatisfying(InvalidArgumentException.class, e -> {
                    assertThat(e.field()).isEqualTo("mode");
                    assertThat(e.value()).isEqualTo("exclusive");
                }).hasMessageContaining("in shared mode").hasMessageContaining("in exclusive mode"));
        assertThat(shared(session, "r1-again")).isEqualTo(new Result.Granted(new FencingToken("db", 1,
                LockMode.SHARED)));
    }

    @Test
    void tryShared_whileWriterHolds_isBusyNamingTheWriter() {
        exclusive(open(), "w");
        Result busy = apply(new Command.Acquire(open(), HASH, "db", "r", false, LockMode.SHARED)).result();
        assertThat(busy).isEqualTo(new Result.Busy("db", new FencingToken("db", 1)));
    }

    @Test
    void snapshot_withReadersAndModedWaiters_restoresAnEqualMachine() throws IOException {
        shared(open(), "r1");
        shared(open(), "r2");
        exclusive(open(), "w");
        shared(open(), "r3");
        byte[] bytes = LockMachineFixture.snapshot(machine);

        LockStateMachine restored = LockStateMachine.readSnapshot(
                new DataInputStream(new ByteArrayInputStream(bytes)), Limits.DEFAULT);

        assertThat(bytes[0]).isEqualTo((byte) 4);
        assertThat(restored.list("", 10)).isEqualTo(machine.list("", 10));
        assertThat(LockMachineFixture.snapshot(restored)).isEqualTo(bytes);
    }

    /** Shared holders' tokens were not checked for uniqueness on read: two readers holding one token loaded. */
    @Test
    void readSnapshot_twoReadersHoldingOneToken_refusedNamingThemAndTheToken() {
        long first = open();
        long second = open();
        shared(first, "r1");
        shared(second, "r2");
        byte[] corrupt = LockMachineFixture.snapshot(machine);
        // The last shared holder's token is the last long before the semaphores' count.
        ByteBuffer.wrap(corrupt).putLong(corrupt.length - 4 - 8, 1);

        assertThatThrownBy(() -> LockStateMachine.readSnapshot(new DataInputStream(new ByteArrayInputStream(corrupt)),
                Limits.DEFAULT)).isInstanceOf(IOException.class)
                .hasMessageContaining("lock db shared holders " + first + " and " + second + " both hold token 1");
    }

    @Test
    void codec_sharedAcquireAndSharedTokenResult_roundTrip() {
        Command acquire = new Command.Acquire(3, HASH, "db", "r", true, LockMode.SHARED);
        byte[] batch = CommandCodec.encodeCommands(List.of(acquire, new Command.Acquire(3, HASH, "db", "w", true)));
        assertThat(batch[0]).isEqualTo((byte) 4);
        assertThat(CommandCodec.decodeCommands(batch)).containsExactly(acquire,
                new Command.Acquire(3, HASH, "db", "w", true));

        Result granted = new Result.Granted(new FencingToken("db", 9, LockMode.SHARED));
        assertThat(CommandCodec.decodeResults(CommandCodec.encodeResults(List.of(granted))))
                .containsExactly(granted);
    }

    @Test
    void decodeCommands_versionTwoBatchWithTheModedAcquireTag_isRefused() {
        byte[] batch = CommandCodec.encodeCommands(List.of(new Command.Acquire(3, HASH, "db", "r", true,
                LockMode.SHARED)));
        batch[0] = 2;
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> CommandCodec.decodeCommands(batch))
                .hasMessageContaining("tag 8 is not in version 2");
    }
}
