import io.fencer.lock.Command;
import io.fencer.lock.CommandCodec;
import io.fencer.lock.Limits;
import io.fencer.lock.LockStateMachine;
import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Test-only generator of the version-1 files beside it, run against the previous release (commit 50436b1, the last
 * one that wrote version 1), never against this tree: it does not compile here, and Maven does not compile it (it is
 * a resource). Run it with that release's jar on the class path, from this directory:
 *
 * <pre>java -cp base-fencer.jar GenerateVersionOneBytes.java .</pre>
 *
 * <p>It writes {@code snapshot-before.bin} (a state with sessions, held locks, waiters, a lock in lock-delay and a
 * floor raised above zero), {@code batch.bin} (one command batch holding every command kind, meant to be applied to
 * that state) and {@code snapshot-after.bin} (the state the previous release reached by applying that batch), and
 * prints each command's result as the previous release gave it. {@code VersionOneCompatibilityTest} asserts the
 * contents.
 */
public final class GenerateVersionOneBytes {
    public static void main(String[] arguments) throws IOException {
        Path directory = Path.of(arguments[0]);
        LockStateMachine machine = new LockStateMachine(Limits.DEFAULT);
        // Sessions 1 to 4.
        apply(machine, new Command.OpenSession("open-1", 10_000));
        apply(machine, new Command.OpenSession("", 5_000));
        apply(machine, new Command.OpenSession("open-3", 20_000));
        apply(machine, new Command.OpenSession("open-4", 2_000));
        // Raise the floor to 3: three grants of one lock, each released with nobody waiting (the record is dropped).
        for (int round = 1; round <= 3; round++) {
            apply(machine, new Command.Acquire(1, "floor/raiser", "raise-" + round, false));
            apply(machine, new Command.Release("floor/raiser", round));
        }
        // jobs/held: session 2 gets token 4, session 1 queues, 2 releases, so 1 holds token 5; then 2 and 3 queue.
        apply(machine, new Command.Acquire(2, "jobs/held", "req-2-first", false));
        apply(machine, new Command.Acquire(1, "jobs/held", "req-1-held", true));
        apply(machine, new Command.Release("jobs/held", 4));
        apply(machine, new Command.Acquire(2, "jobs/held", "req-2-held", true));
        apply(machine, new Command.Acquire(3, "jobs/held", "req-3-held", true));
        // jobs/third: held by session 3 under token 4.
        apply(machine, new Command.Acquire(3, "jobs/third", "req-3-third", false));
        // jobs/delayed: held by session 4 (token 4), session 3 queues, session 4 expires with lock-delay.
        apply(machine, new Command.Acquire(4, "jobs/delayed", "req-4-delayed", false));
        apply(machine, new Command.Acquire(3, "jobs/delayed", "req-3-delayed", true));
        apply(machine, new Command.ExpireSession(4, true));
        machine.checkInvariants();
        Files.write(directory.resolve("snapshot-before.bin"), snapshot(machine));

        List<Command> batch = new ArrayList<>();
        batch.add(new Command.OpenSession("open-5", 15_000)); // session 5
        batch.add(new Command.Acquire(5, "jobs/\u00e9t\u00e9", "req-5-ete", false)); // granted, token 4
        batch.add(new Command.Acquire(5, "jobs/held", "req-5-held", true)); // queued at 2
        batch.add(new Command.CancelWait(5, "jobs/held", "req-5-held")); // removed
        batch.add(new Command.CancelWait(2, "jobs/none", null)); // nothing to cancel
        batch.add(new Command.Release("jobs/\u00e9t\u00e9", 99)); // not the holder's token: refused
        batch.add(new Command.Release("jobs/held", 5)); // released by session 1; session 2 gets token 6
        batch.add(new Command.CloseSession(3)); // releases jobs/third, drops its waits
        batch.add(new Command.ExpireSession(2, false)); // releases jobs/held (token 6); nobody waits: dropped
        batch.add(new Command.EndLockDelay("jobs/delayed")); // nobody waits any more: dropped
        batch.add(new Command.OpenSession("open-1", 10_000)); // a retry of session 1's open
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
