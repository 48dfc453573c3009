import io.fencer.core.LockMode;
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
 * Test-only generator of the version-3 files beside it, run against the release before quotas (commit 3874ffc, the
 * last one that wrote version 3), never against this tree: Maven does not compile it (it is a resource). Run it with
 * that release's fencer-core and fencer-lock classes on the class path, from this directory:
 *
 * <pre>java -cp v3-classes GenerateVersionThreeBytes.java .</pre>
 *
 * <p>It writes {@code snapshot-before.bin} (anonymous and named sessions holding exclusive, shared and permit
 * grants, plain, multi-lock and permit waits), {@code batch.bin} (one command batch of the kinds version 3 added and
 * of opens, meant for that state) and {@code snapshot-after.bin} (the state that release reached by applying the
 * batch), and prints each result.
 */
public final class GenerateVersionThreeBytes {
    private static final SecretHash HASH = SecretHash.of("the version-3 sessions' secret");

    public static void main(String[] arguments) throws IOException {
        Path directory = Path.of(arguments[0]);
        LockStateMachine machine = new LockStateMachine(Limits.DEFAULT);
        apply(machine, new Command.OpenSession("open-1", 10_000, "anonymous", HASH)); // session 1
        apply(machine, new Command.OpenSession("open-2", 20_000, "anonymous", HASH)); // session 2
        apply(machine, new Command.OpenSession("", 30_000, "carol", HASH)); // session 3
        apply(machine, new Command.Acquire(1, HASH, "jobs/held", "req-1-held", false)); // token 1
        apply(machine, new Command.Acquire(2, HASH, "jobs/held", "req-2-held", true)); // queued 0
        apply(machine, new Command.Acquire(2, HASH, "db/rw", "req-2-rw", false, LockMode.SHARED)); // shared 1
        apply(machine, new Command.Acquire(3, HASH, "db/rw", "req-3-rw", false, LockMode.SHARED)); // shared 2
        apply(machine, new Command.AcquirePermit(1, HASH, "pool", 1, "req-1-pool", false)); // pool/permit-0
        apply(machine, new Command.AcquirePermit(3, HASH, "pool", 1, "req-3-pool", true)); // queued 0
        apply(machine, Command.AcquireAll.of(3, HASH, List.of("jobs/held", "jobs/other"), "req-3-all", true));
        machine.checkInvariants();
        Files.write(directory.resolve("snapshot-before.bin"), snapshot(machine));

        List<Command> batch = new ArrayList<>();
        batch.add(new Command.OpenSession("open-4", 15_000, "anonymous", HASH)); // session 4
        batch.add(new Command.Acquire(4, HASH, "db/rw", "req-4-rw", true, LockMode.EXCLUSIVE)); // queued behind
        batch.add(new Command.AcquirePermit(4, HASH, "pool", 1, "req-4-pool", true)); // queued 1
        batch.add(Command.AcquireAll.of(4, HASH, List.of("solo/a", "solo/b"), "req-4-all", false)); // granted
        batch.add(new Command.Release(2, HASH, "db/rw", 1)); // shared 1 ends; 3 still shares
        batch.add(new Command.ExpireSession(1, false)); // jobs/held to session 2, pool to session 3
        batch.add(new Command.CloseSession(3, HASH)); // db/rw to session 4, the multi-lock wait dropped
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
