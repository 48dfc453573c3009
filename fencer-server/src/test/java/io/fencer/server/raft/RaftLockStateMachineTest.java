package io.fencer.server.raft;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.core.InvalidArgumentException;
import io.fencer.core.Ticker;
import io.fencer.core.UnavailableException;
import io.fencer.lock.Command;
import io.fencer.lock.CommandCodec;
import io.fencer.lock.Limits;
import io.fencer.lock.LockStateMachine;
import io.fencer.lock.Result;
import io.fencer.lock.SecretHash;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.ratis.proto.RaftProtos.LogEntryProto;
import org.apache.ratis.proto.RaftProtos.RaftPeerRole;
import org.apache.ratis.proto.RaftProtos.StateMachineLogEntryProto;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.statemachine.TransactionContext;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;
import org.junit.jupiter.api.Test;

/**
 * The apply of log entries the leader should never have written: refused entries are deterministic no-ops, counted,
 * and leave every replica in the same state; an unexpected failure halts the apply at its entry. Entries are fed
 * straight to {@link RaftLockStateMachine#applyTransaction}, as Ratis's updater does, without a Ratis server.
 */
class RaftLockStateMachineTest {
    private static final long TERM = 7;
    private static final long TTL_MILLIS = 60_000;
    private static final SecretHash HASH = SecretHash.of("the tests' session secret");
    private static final ByteString CLIENT_ID = ByteString.copyFrom(ByteBuffer.allocate(16)
            .putLong(UUID.randomUUID().getMostSignificantBits()).putLong(1).array());

    /** Entries that do not decode: garbage, truncation, an unknown tag or version, an id missing, nothing at all. */
    static List<byte[]> undecodable() {
        byte[] valid = CommandCodec.encodeCommands(List.of(new Command.Acquire(1, HASH, "orders", "request-9", true)));
        return List.of(
                new byte[] {0x42, 0x17, (byte) 0xff, 0x00, 0x13},
                Arrays.copyOf(valid, valid.length / 2),
                Arrays.copyOf(valid, valid.length + 3), // trailing bytes
                bytes(out -> {
                    out.writeByte(CommandCodec.VERSION_FOUR);
                    out.writeInt(1);
                    out.writeByte(99); // no command has tag 99
                }),
                bytes(out -> {
                    out.writeByte(CommandCodec.VERSION_FOUR);
                    out.writeInt(1);
                    out.writeByte(1); // an OpenSession without its request id and identity
                    out.writeInt(-1);
                    out.writeLong(TTL_MILLIS);
                    out.writeInt(-1);
                    out.write(new byte[SecretHash.BYTES]);
                }),
                bytes(out -> {
                    out.writeByte(9); // a version no release wrote
                    out.writeInt(0);
                }),
                bytes(out -> {
                    out.writeByte(CommandCodec.VERSION_FOUR);
                    out.writeInt(Integer.MAX_VALUE); // a count the bytes cannot hold
                }),
                new byte[0]);
    }

    /** Entries that decode, each holding commands that break a rule (missing ids, values out of range). */
    static List<byte[]> malformed() {
        return List.of(
                encode(new Command.Acquire(0, HASH, "orders", "request-1", false)),
                encode(new Command.Release(1, SecretHash.NONE, "orders", 1)),
                encode(new Command.OpenSession("open-x", 0, "tester", HASH)),
                encode(new Command.AcquirePermit(1, HASH, "pool", 0, "request-2", false)),
                encode(new Command.Release(1, HASH, "orders", 0)),
                encode(new Command.ExpireSession(-1, false), new Command.CloseSession(0, HASH)));
    }

    @Test
    void applyTransaction_refusedEntriesOfEachKind_areNoOpsCountedAndAlikeOnTwoReplicas() throws Exception {
        List<byte[]> log = new ArrayList<>();
        List<byte[]> valid = new ArrayList<>();
        add(log, valid, encode(new Command.OpenSession("open-1", TTL_MILLIS, "tester", HASH)));
        log.addAll(undecodable());
        add(log, valid, encode(new Command.Acquire(1, HASH, "orders", "request-1", false)));
        log.addAll(malformed());
        // A malformed command beside a good one: the good one applies, only the bad one is a no-op.
        log.add(encode(new Command.Acquire(0, HASH, "orders", "request-3", false),
                new Command.Acquire(1, HASH, "mixed", "request-4", false)));
        valid.add(encode(new Command.Acquire(1, HASH, "mixed", "request-4", false)));
        MeterRegistry registry = new SimpleMeterRegistry();
        RaftLockStateMachine first = new RaftLockStateMachine(Limits.DEFAULT);
        first.registerMetrics(registry);
        RaftLockStateMachine second = new RaftLockStateMachine(Limits.DEFAULT);
        RaftLockStateMachine clean = new RaftLockStateMachine(Limits.DEFAULT);

        List<ByteString> firstReplies = applyAll(first, log);
        List<ByteString> secondReplies = applyAll(second, log);
        applyAll(clean, valid);

        assertThat(secondReplies).as("the replies of two replicas").isEqualTo(firstReplies);
        assertThat(state(second)).as("the states of two replicas").isEqualTo(state(first));
        assertThat(state(first)).as("the state, as if the refused entries never were").isEqualTo(state(clean));
        assertThat(first.getLastAppliedTermIndex().getIndex()).as("every entry consumed").isEqualTo(log.size());
        assertThat(first.halt()).isNull();
        assertThat(refused(registry, "undecodable")).isEqualTo(undecodable().size());
        assertThat(refused(registry, "malformed")).isEqualTo(malformed().size() + 1);
        boolean mixedHeld = first.readLocal(machine -> machine.describe("mixed").isPresent());
        assertThat(mixedHeld).as("the good command beside a bad one applied").isTrue();
        List<Result> mixed = CommandCodec.decodeResults(firstReplies.get(log.size() - 1).toByteArray());
        assertThat(mixed.get(0)).isInstanceOfSatisfying(Result.Rejected.class,
                rejected -> assertThat(rejected.error()).isInstanceOf(InvalidArgumentException.class)
                        .hasMessageContaining("session ids are at least 1"));
        assertThat(mixed.get(1)).isInstanceOf(Result.Granted.class);
    }

    @Test
    void applyTransaction_unexpectedFailure_haltsAtItsEntryAndAppliesNothingAfter() throws Exception {
        MeterRegistry registry = new SimpleMeterRegistry();
        RaftLockStateMachine stateMachine = FailingApplies.onAcquireOf("boom", Limits.DEFAULT, Ticker.system(),
                () -> new IllegalStateException("the state machine broke"));
        stateMachine.registerMetrics(registry);
        List<ApplyHalt> hooked = new ArrayList<>();
        stateMachine.addHaltHook(hooked::add);
        applyAll(stateMachine, List.of(encode(new Command.OpenSession("open-1", TTL_MILLIS, "tester", HASH)),
                encode(new Command.Acquire(1, HASH, "fine", "request-1", false))));
        byte[] before = state(stateMachine);

        Message reply = apply(stateMachine, 3, encode(new Command.Acquire(1, HASH, "boom", "request-2", false)));
        Message after = apply(stateMachine, 4, encode(new Command.Acquire(1, HASH, "later", "request-3", false)));

        ApplyHalt halt = stateMachine.halt();
        assertThat(halt).isEqualTo(new ApplyHalt(3, TERM, "IllegalStateException: the state machine broke"));
        assertThat(hooked).containsExactly(halt);
        assertThat(reply.getContent().isEmpty()).isTrue();
        assertThat(after.getContent().isEmpty()).isTrue();
        assertThat(stateMachine.getLastAppliedTermIndex().getIndex()).as("the last entry applied").isEqualTo(2);
        assertThat(state(stateMachine)).as("nothing applied after the halt").isEqualTo(before);
        assertThat(registry.get("fencer.raft.halted").gauge().value()).isEqualTo(1);
        assertThat(registry.get("fencer.raft.entries.unapplied").functionCounter().count()).isEqualTo(1);
        CompletableFuture<Integer> read = stateMachine.registerRead(1, LockStateMachine::sessionCount);
        stateMachine.query(RaftLockStateMachine.readMessage(1)).get(10, TimeUnit.SECONDS);
        assertThat(read).failsWithin(10, TimeUnit.SECONDS).withThrowableOfType(ExecutionException.class)
                .havingCause().isInstanceOf(UnavailableException.class)
                .withMessageContaining("halted applying the Raft log at index 3")
                .withMessageContaining("the state machine broke").withMessageContaining("To recover");
    }

    /** An assertion that fails (Java runs with -ea in tests and in the process tests) halts as an exception does. */
    @Test
    void applyTransaction_failedAssertion_haltsToo() throws Exception {
        RaftLockStateMachine asserting = new RaftLockStateMachine(Limits.DEFAULT, Ticker.system(),
                (machine, command) -> {
                    throw new AssertionError("invariant broken");
                });

        apply(asserting, 1, encode(new Command.OpenSession("open-1", TTL_MILLIS, "tester", HASH)));

        assertThat(asserting.halt()).isEqualTo(new ApplyHalt(1, TERM, "AssertionError: invariant broken"));
        assertThat(asserting.getLastAppliedTermIndex().getIndex()).as("nothing applied").isLessThan(1);
    }

    private static void add(List<byte[]> log, List<byte[]> valid, byte[] entry) {
        log.add(entry);
        valid.add(entry);
    }

    private static List<ByteString> applyAll(RaftLockStateMachine stateMachine, List<byte[]> entries)
            throws Exception {
        long first = Math.max(1, stateMachine.getLastAppliedTermIndex().getIndex() + 1);
        List<ByteString> replies = new ArrayList<>();
        for (int i = 0; i < entries.size(); i++) {
            replies.add(apply(stateMachine, first + i, entries.get(i)).getContent());
        }
        return replies;
    }

    /** Applies one entry as Ratis's updater on a follower does, and returns its reply. */
    static Message apply(RaftLockStateMachine stateMachine, long index, byte[] data) throws Exception {
        LogEntryProto entry = LogEntryProto.newBuilder().setTerm(TERM).setIndex(index)
                .setStateMachineLogEntry(StateMachineLogEntryProto.newBuilder().setClientId(CLIENT_ID)
                        .setCallId(index).setLogData(ByteString.copyFrom(data)))
                .build();
        TransactionContext transaction = TransactionContext.newBuilder().setServerRole(RaftPeerRole.FOLLOWER)
                .setStateMachine(stateMachine).setLogEntry(entry).build();
        return stateMachine.applyTransaction(transaction).get(10, TimeUnit.SECONDS);
    }

    private static double refused(MeterRegistry registry, String why) {
        return registry.get("fencer.raft.entries.refused").tag("why", why).functionCounter().count();
    }

    private static byte[] state(RaftLockStateMachine stateMachine) {
        return stateMachine.readLocal(machine -> {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            try (DataOutputStream out = new DataOutputStream(bytes)) {
                machine.writeSnapshot(out);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            return bytes.toByteArray();
        });
    }

    static byte[] encode(Command... commands) {
        return CommandCodec.encodeCommands(List.of(commands));
    }

    @FunctionalInterface
    private interface Writer {
        void write(DataOutputStream out) throws IOException;
    }

    private static byte[] bytes(Writer writer) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            writer.write(out);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }
}
