package io.fencer.lock;

import io.fencer.core.FencingToken;
import io.fencer.core.LockMode;
import io.fencer.core.internal.LockName;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.TreeMap;

/**
 * Two fixed command sequences over every primitive (sessions, quotas, lease checkpoints, exclusive and shared locks,
 * lock-delay, semaphores, multi-locks, refused secrets, a version-1 release, token exhaustion), recorded as the
 * snapshot bytes they reach and a transcript of every result, event and read. {@link StateMachineGoldenTest} compares
 * them with the files in {@code src/test/resources/golden}, which {@link #main} wrote from the state machine as it
 * was before it was split into its parts: a refactoring of the machine must leave both byte for byte the same.
 *
 * <p>Nothing here may depend on the clock, on hash order or on the JDK's randomness: {@link Random} with a fixed seed
 * has a specified sequence, and every map printed is sorted first.
 */
final class GoldenRun {
    static final String SCENARIO_SNAPSHOTS = "scenario-snapshots.bin";
    static final String SCENARIO_TRANSCRIPT = "scenario-transcript.txt";
    static final String RANDOM_SNAPSHOTS = "random-snapshots.bin";
    static final String RANDOM_TRANSCRIPT_SHA256 = "random-transcript.sha256";

    private static final SecretHash HASH = SecretHash.of("the golden run's secret");
    private static final SecretHash WRONG = SecretHash.of("a guess");
    private static final List<String> LOCKS = List.of("a", "b", "c", "d", "s/permit-0", "s/permit-1");
    private static final Limits RANDOM_LIMITS = new Limits(6, 9, 3, 4, 1_000, 60_000);
    private static final long RANDOM_SEED = 20_240_601L;
    private static final int RANDOM_STEPS = 4_000;
    private static final int SNAPSHOT_EVERY = 250;

    /** What a run produced: its snapshots (each length-prefixed, in order) and its transcript. */
    record Output(byte[] snapshots, String transcript) {
        String transcriptSha256() {
            try {
                byte[] digest = MessageDigest.getInstance("SHA-256")
                        .digest(transcript.getBytes(StandardCharsets.UTF_8));
                return HexFormat.of().formatHex(digest);
            } catch (NoSuchAlgorithmException e) {
                throw new IllegalStateException("every JDK has SHA-256", e);
            }
        }
    }

    private final ByteArrayOutputStream snapshots = new ByteArrayOutputStream();
    private final StringBuilder transcript = new StringBuilder();
    private LockStateMachine machine;

    private GoldenRun(LockStateMachine machine) {
        this.machine = machine;
    }

    /** Writes the golden files into the directory named by the first argument. */
    public static void main(String[] arguments) throws IOException {
        Path directory = Path.of(arguments[0]);
        Files.createDirectories(directory);
        Output scenario = scenario();
        Files.write(directory.resolve(SCENARIO_SNAPSHOTS), scenario.snapshots());
        Files.writeString(directory.resolve(SCENARIO_TRANSCRIPT), scenario.transcript(), StandardCharsets.UTF_8);
        Output random = random();
        Files.write(directory.resolve(RANDOM_SNAPSHOTS), random.snapshots());
        Files.writeString(directory.resolve(RANDOM_TRANSCRIPT_SHA256), random.transcriptSha256() + "\n",
                StandardCharsets.UTF_8);
    }

    /** A hand-written sequence that passes through each primitive's paths once or twice. */
    static Output scenario() {
        GoldenRun run = new GoldenRun(new LockStateMachine(new Limits(10, 12, 2, 5, 1_000, 60_000)));
        run.apply(new Command.OpenSession("open-1", 10_000, "alice", HASH)); // 1
        run.apply(new Command.OpenSession("open-2", 20_000, "bob", HASH, "team")); // 2
        run.apply(new Command.OpenSession("", 30_000, "carol", HASH, "team")); // 3
        run.apply(new Command.OpenSession("open-1", 10_000, "alice", HASH)); // retried: session 1
        run.apply(new Command.OpenSession("open-1", 10_000, "mallory", HASH)); // another identity: refused
        run.apply(new Command.OpenSession("open-1", 10_000, "alice", WRONG)); // another secret: refused
        run.apply(new Command.OpenSession("bad-ttl", 10, "alice", HASH)); // ttl under the minimum
        run.apply(new Command.Acquire(1, HASH, "jobs/a", "r1", false));
        run.apply(new Command.Acquire(1, HASH, "jobs/a", "r1-again", false)); // retry: the same grant
        run.apply(new Command.Acquire(1, HASH, "jobs/a", "r1-shared", false, LockMode.SHARED)); // other mode
        run.apply(new Command.Acquire(2, HASH, "jobs/a", "r2", false)); // busy
        run.apply(new Command.Acquire(2, HASH, "jobs/a", "r2q", true)); // queued 0
        run.apply(new Command.Acquire(3, HASH, "jobs/a", "r3q", true)); // queued 1
        run.apply(new Command.Acquire(3, WRONG, "jobs/a", "r3-wrong", true)); // refused secret
        run.apply(new Command.Acquire(9, HASH, "jobs/a", "r9", true)); // unknown session
        run.apply(new Command.Acquire(2, HASH, "db", "r2-db", false, LockMode.SHARED));
        run.apply(new Command.Acquire(3, HASH, "db", "r3-db", false, LockMode.SHARED));
        run.apply(new Command.Acquire(1, HASH, "db", "r1-db", true)); // a writer behind two readers
        run.apply(new Command.OpenSession("open-4", 15_000, "dave", HASH)); // 4
        run.apply(new Command.Acquire(4, HASH, "db", "r4-db", true, LockMode.SHARED)); // waits behind the writer
        run.reads();
        run.apply(new Command.Release(2, HASH, "db", 1)); // one reader leaves
        run.apply(new Command.Release(2, HASH, "db", 1)); // not the holder any more
        run.apply(new Command.Release(3, HASH, "db", 2)); // the writer gets it, then the reader waits
        run.apply(new Command.AcquirePermit(2, HASH, "pool", 2, "p2", false));
        run.apply(new Command.AcquirePermit(3, HASH, "pool", 2, "p3", false));
        run.apply(new Command.AcquirePermit(4, HASH, "pool", 2, "p4", true)); // queued 0
        run.apply(new Command.AcquirePermit(4, HASH, "pool", 3, "p4-3", true)); // another count: refused
        run.apply(new Command.Acquire(4, HASH, "pool/permit-0", "slot", false)); // a slot: refused
        run.apply(new Command.AcquirePermit(2, HASH, "pool", 2, "p2-again", false)); // retry: the same permit
        run.apply(Command.AcquireAll.of(4, HASH, List.of("m/x", "m/y"), "all-4", false)); // granted
        run.apply(Command.AcquireAll.of(2, HASH, List.of("m/y", "m/z"), "all-2", true)); // queued
        run.apply(Command.AcquireAll.of(3, HASH, List.of("m/z", "m/w"), "all-3", false)); // busy: m/z has a waiter
        run.apply(Command.AcquireAll.of(2, HASH, List.of("m/y", "m/z"), "all-2-again", true)); // retry: its place
        run.apply(new Command.CheckpointLeases(List.of(new Command.LeaseCheckpoint(1, 4_000),
                new Command.LeaseCheckpoint(2, 90_000), new Command.LeaseCheckpoint(77, 1_000))));
        run.reads();
        run.snapshot();
        run.apply(new Command.ExpireSession(1, true)); // jobs/a and db delayed
        run.apply(new Command.Acquire(4, HASH, "jobs/a", "r4-a", false)); // busy: delayed
        run.apply(new Command.EndLockDelay("jobs/a")); // to session 2
        run.apply(new Command.EndLockDelay("jobs/a")); // not delayed any more
        run.apply(new Command.CancelWait(3, HASH, "jobs/a", "c3"));
        run.apply(new Command.CancelWait(4, HASH, "pool", "c4"));
        run.apply(new Command.CancelWait(2, HASH, "m/y", "c2")); // a multi-lock leaves as a unit
        run.apply(new Command.CloseSession(3, WRONG)); // refused
        run.apply(new Command.CloseSession(3, HASH)); // m/z to nobody, the permit freed
        run.apply(new Command.EndLockDelay("db")); // to the reader, session 4
        run.apply(new Command.CheckpointLeases(List.of(new Command.LeaseCheckpoint(2,
                Command.LeaseCheckpoint.RENEWED))));
        run.reads();
        run.snapshot();
        run.restore();
        run.apply(new Command.Release(0, SecretHash.NOT_CARRIED, "jobs/a", 99)); // version 1: not the token
        run.apply(new Command.Release(0, SecretHash.NOT_CARRIED, "jobs/a", 2)); // version 1: by its token alone
        run.apply(new Command.ExpireSession(4, false));
        run.apply(new Command.CloseSession(2, HASH));
        run.apply(new Command.CloseSession(2, HASH)); // already ended
        run.reads();
        run.snapshot();
        run.exhaustion();
        return run.output();
    }

    /** Grants near the token limit, on a machine whose floor starts just under it. */
    private void exhaustion() {
        machine = LockStateMachine.withFloor(new Limits(10, 12, 2, 5, 1_000, 60_000), FencingToken.VALUE_MAX - 2);
        apply(new Command.OpenSession("x-1", 10_000, "erin", HASH));
        apply(new Command.OpenSession("x-2", 10_000, "erin", HASH));
        apply(new Command.Acquire(1, HASH, "last", "x1", false));
        apply(new Command.Acquire(2, HASH, "last", "x2", true));
        apply(new Command.Release(1, HASH, "last", FencingToken.VALUE_MAX - 1));
        apply(new Command.Acquire(1, HASH, "last", "x1-again", true)); // exhausted: refused
        apply(new Command.AcquirePermit(1, HASH, "p", 1, "xp", false));
        apply(Command.AcquireAll.of(1, HASH, List.of("last", "new"), "xall", true));
        reads();
        snapshot();
    }

    /** A long pseudo-random sequence under tight limits, with restores from its own snapshots on the way. */
    static Output random() {
        GoldenRun run = new GoldenRun(new LockStateMachine(RANDOM_LIMITS));
        Random random = new Random(RANDOM_SEED);
        for (int step = 0; step < RANDOM_STEPS; step++) {
            run.randomStep(random, step);
            if (step % 50 == 49) {
                run.reads();
            }
            if (step % SNAPSHOT_EVERY == SNAPSHOT_EVERY - 1) {
                run.snapshot();
            }
            if (step % 400 == 399) {
                run.restore();
            }
        }
        return run.output();
    }

    private void randomStep(Random random, int step) {
        long sessionId = sessionId(random);
        SecretHash presented = random.nextInt(12) == 0 ? WRONG : HASH;
        String lock = LOCKS.get(random.nextInt(LOCKS.size()));
        boolean waitQueued = random.nextBoolean();
        int kind = random.nextInt(100);
        if (kind < 12) {
            int pick = random.nextInt(10);
            apply(new Command.OpenSession(pick < 6 ? "" : "open-" + pick, pick == 0 ? 5 : 1_000L * (1 + pick),
                    "id" + pick % 2, HASH, "q" + pick % 3));
        } else if (kind < 15) {
            apply(new Command.CloseSession(sessionId, presented));
        } else if (kind < 19) {
            apply(new Command.ExpireSession(sessionId, random.nextBoolean()));
        } else if (kind < 40) {
            apply(new Command.Acquire(sessionId, presented, lock, "a-" + step, waitQueued,
                    random.nextInt(3) == 0 ? LockMode.SHARED : LockMode.EXCLUSIVE));
        } else if (kind < 46) {
            apply(new Command.CancelWait(sessionId, presented, random.nextInt(4) == 0 ? "s" : lock, "c-" + step));
        } else if (kind < 60) {
            apply(randomRelease(random, sessionId, presented, lock));
        } else if (kind < 65) {
            List<String> delayed = machine.delayedLocks();
            apply(new Command.EndLockDelay(delayed.isEmpty() || random.nextInt(4) == 0 ? lock
                    : delayed.get(random.nextInt(delayed.size()))));
        } else if (kind < 78) {
            apply(new Command.AcquirePermit(sessionId, presented, "s", random.nextInt(8) == 0 ? 3 : 2, "p-" + step,
                    waitQueued));
        } else if (kind < 92) {
            List<String> plain = new ArrayList<>(LOCKS.subList(0, 4));
            java.util.Collections.shuffle(plain, random);
            apply(Command.AcquireAll.of(sessionId, presented, plain.subList(0, 2 + random.nextInt(2)), "m-" + step,
                    waitQueued));
        } else {
            long remaining = random.nextInt(3) == 0 ? Command.LeaseCheckpoint.RENEWED : 1_000L * random.nextInt(70);
            apply(new Command.CheckpointLeases(List.of(new Command.LeaseCheckpoint(sessionId, remaining))));
        }
    }

    /** A release by the holder's token mostly, else by a wrong one; now and then a version-1 release. */
    private Command randomRelease(Random random, long sessionId, SecretHash presented, String lock) {
        Optional<LockView> view = machine.describe(lock);
        long token = 1 + random.nextInt(40);
        long holder = sessionId;
        if (view.isPresent() && random.nextInt(4) != 0) {
            LockView held = view.get();
            if (held.holder() != null) {
                token = held.holder().value();
                holder = held.holderSessionId();
            } else if (!held.sharedHolders().isEmpty()) {
                List<LockView.SharedHolderView> holders = held.sharedHolders();
                LockView.SharedHolderView shared = holders.get(random.nextInt(holders.size()));
                token = shared.token().value();
                holder = shared.sessionId();
            }
        }
        if (random.nextInt(15) == 0) {
            return new Command.Release(0, SecretHash.NOT_CARRIED, lock, token);
        }
        return new Command.Release(holder, presented, lock, token);
    }

    /** Mostly an open session; now and then an id that is ended or was never opened. */
    private long sessionId(Random random) {
        List<SessionView> open = List.copyOf(machine.sessions());
        if (!open.isEmpty() && random.nextInt(8) != 0) {
            return open.get(random.nextInt(open.size())).sessionId();
        }
        long last = open.isEmpty() ? 0 : open.get(open.size() - 1).sessionId();
        return 1 + random.nextInt(Math.toIntExact(last + 2));
    }

    private void apply(Command command) {
        Applied applied = machine.apply(command);
        machine.checkInvariants();
        transcript.append(command).append("\n  -> ").append(applied.result()).append('\n');
        for (Event event : applied.events()) {
            transcript.append("  ").append(event).append('\n');
        }
        transcript.append("  usage changes ").append(machine.takeUsageChanges()).append('\n');
    }

    /** Records every public read of the machine. */
    private void reads() {
        transcript.append("reads: floor ").append(machine.floor()).append(", sessions ").append(machine.sessionCount())
                .append(", locks ").append(machine.lockCount()).append(", waiters ").append(machine.waiterCount())
                .append(", delayed ").append(machine.delayedLocks()).append('\n');
        machine.sessions().forEach(session -> transcript.append("  ").append(session).append('\n'));
        machine.list("", 1_000).forEach(lock -> transcript.append("  ").append(lock).append('\n'));
        transcript.append("  ").append(machine.describeSemaphore("s")).append('\n');
        transcript.append("  ").append(machine.describeSemaphore("pool")).append('\n');
        transcript.append("  usage ").append(new TreeMap<>(machine.usageByIdentity())).append('\n');
        transcript.append("  usage q1 ").append(machine.usage("q1")).append(", team ").append(machine.usage("team"))
                .append('\n');
        transcript.append("  opened by open-7 ").append(machine.sessionOpenedBy("open-7")).append('\n');
        for (String lock : List.of("a", "b", "db", "jobs/a", "s/permit-0", "last")) {
            for (long value = 1; value < 6; value++) {
                transcript.append("  ").append(lock).append('#').append(value).append(' ')
                        .append(machine.validate(FencingToken.of(LockName.of(lock), value))).append(", shared ")
                        .append(machine.validate(FencingToken.of(LockName.of(lock), value, LockMode.SHARED)).status())
                        .append('\n');
            }
        }
        for (long sessionId = 1; sessionId <= 4; sessionId++) {
            for (String name : List.of("a", "s", "pool", "db", "m/y")) {
                transcript.append(machine.takesPart(sessionId, name) ? 'T' : 'f');
            }
        }
        transcript.append('\n');
    }

    private void snapshot() {
        byte[] bytes = LockMachineFixture.snapshot(machine);
        try (DataOutputStream out = new DataOutputStream(snapshots)) {
            out.writeInt(bytes.length);
            out.write(bytes);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Replaces the machine by one read from its own snapshot, as a restarted replica would. */
    private void restore() {
        try {
            machine = LockStateMachine.readSnapshot(new DataInputStream(new ByteArrayInputStream(LockMachineFixture.snapshot(machine))),
                    machine.limits());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        transcript.append("restored; usage changes ").append(machine.takeUsageChanges()).append('\n');
    }

    private Output output() {
        return new Output(snapshots.toByteArray(), transcript.toString());
    }
}
