import io.fencer.lock.Command;
import io.fencer.lock.CommandCodec;
import io.fencer.lock.Limits;
import io.fencer.lock.LockStateMachine;
import io.fencer.lock.SecretHash;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Test-only generator of the version-2 files beside it, run against the release before read-write locks (commit
 * 32a1c0f, the last one that wrote version 2), never against this tree: Maven does not compile it (it is a
 * resource). Run it with that release's fencer-core and fencer-lock classes on the class path, from this directory:
 *
 * <pre>java -cp v2-classes GenerateVersionTwoBytes.java .</pre>
 *
 * <p>It writes {@code snapshot-before.bin} (sessions with secret hashes, held locks, waiters, a lock in lock-delay,
 * a raised floor), {@code batch.bin} (one command batch of every command kind, meant for that state) and
 * {@code snapshot-after.bin} (the state that release reached by applying the batch), and prints each result.
 */
public final class GenerateVersionTwoBytes {
    private static final SecretHash HASH = SecretHash.of("the version-2 sessions' secret");

    public static void main(String[] arguments) throws IOException {
        Path directory = Path.of(arguments[0]);
        LockStateMachine machine = new LockStateMachine(Limits.DEFAULT);
        apply(machine, new Command.OpenSession("open-1", 10_000, "alice", HASH));
        apply(machine, new Command.OpenSession("", 5_000, "bob", HASH));
        apply(machine, new Command.OpenSession("open-3", 20_000, "carol", HASH));
        for (int round = 1; round <= 3; round++) {
            apply(machine, new Command.Acquire(1, HASH, "floor/raiser", "raise-" + round, false));
            apply(machine, new Command.Release(1, HASH, "floor/raiser", round));
        }
        apply(machine, new Command.Acquire(1, HASH, "jobs/held", "req-1-held", false)); // token 4
        apply(machine, new Command.Acquire(2, HASH, "jobs/held", "req-2-held", true)); // queued 0
        apply(machine, new Command.Acquire(3, HASH, "jobs/held", "req-3-held", true)); // queued 1
        apply(machine, new Command.Acquire(2, HASH, "jobs/delayed", "req-2-delayed", false)); // token 4
        apply(machine, new Command.Acquire(3, HASH, "jobs/delayed", "req-3-delayed", true)); // queued 0
        apply(machine, new Command.ExpireSession(2, true)); // jobs/delayed delayed; 2's wait on jobs/held dropped
        machine.checkInvariants();
        Files.write(directory.resolve("snapshot-before.bin"), snapshot(machine));

        List<Command> batch = new ArrayList<>();
        batch.add(new Command.OpenSession("open-4", 15_000, "dave", HASH)); // session 4
        batch.add(new Command.Acquire(4, HASH, "jobs/new", "req-4-new", false)); // granted, token 4
        batch.add(new Command.Acquire(4, HASH, "jobs/held", "req-4-held", true)); // queued behind 3
        batch.add(new Command.CancelWait(4, HASH, "jobs/held", "req-4-held")); // removed
        batch.add(new Command.Release(4, HASH, "jobs/new", 99)); // not the holder's token: refused
        batch.add(new Command.Release(1, HASH, "jobs/held", 4)); // session 3 gets token 5
        batch.add(new Command.EndLockDelay("jobs/delayed")); // session 3 gets token 5
        batch.add(new Command.CloseSession(1, HASH)); // holds nothing any more
        batch.add(new Command.ExpireSession(4, false)); // releases jobs/new
        byte[] encoded = CommandCodec.encodeCommands(batch);
        Files.write(directory.resolve("batch.bin"), encoded);
        for (Command command : CommandCodec.decodeCommands(encoded)) {
            apply(machine, command);
        }
        machine.checkInvariants();
        Files.write(directory.resolve("snapshot-after.bin"), snapshot(machine));
    }

    private static void apply(LockStateMachine machine, Command command) {
        System.out.println(command + " -> " + machine.apply(command).result());
    }

    private static byte[] snapshot(LockStateMachine machine) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            machine.writeSnapshot(out);
        }
        return bytes.toByteArray();
    }
}
