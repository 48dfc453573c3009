package io.fencer.lock;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.core.FencingToken;
import io.fencer.core.LockMode;
import java.io.ByteArrayInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Data written by the release before quotas (version 3) loads: its sessions, which carry no quota identity, count
 * against their own identity (every anonymous session together, as that release could tell them no better) and have
 * no recorded lease bound; its batches decode to the same commands and reach the state that release reached. The
 * bytes in {@code src/test/resources/v3} were made by that release's own code (see the README there).
 */
class VersionThreeCompatibilityTest {
    private static final SecretHash HASH = SecretHash.of("the version-3 sessions' secret");

    @Test
    void readSnapshot_ofVersionThreeSnapshot_countsSessionsAgainstTheirIdentityWithoutLeaseBounds()
            throws IOException {
        LockStateMachine machine = restore("snapshot-before.bin");

        assertThat(machine.sessions()).extracting(SessionView::quotaIdentity)
                .containsExactly("anonymous", "anonymous", "carol");
        assertThat(machine.sessions()).extracting(SessionView::leaseBoundMillis).containsOnly(-1L);
        assertThat(machine.sessions()).allSatisfy(session ->
                assertThat(session.takeoverLeaseMillis()).isEqualTo(session.ttlMillis()));
        // Session 1 holds jobs/held and a permit; session 2 shares db/rw and waits for jobs/held.
        assertThat(machine.usage("anonymous")).isEqualTo(new IdentityUsage(2, 4, 1));
        // Session 3 shares db/rw, waits for a permit and, as a multi-lock, for jobs/held and jobs/other.
        assertThat(machine.usage("carol")).isEqualTo(new IdentityUsage(1, 4, 3));
        assertThat(machine.usageByIdentity()).containsOnlyKeys("anonymous", "carol");
    }

    @Test
    void apply_ofVersionThreeBatchOnVersionThreeSnapshot_reachesTheStateThatReleaseReached() throws IOException {
        LockStateMachine machine = restore("snapshot-before.bin");
        byte[] batch = resource("batch.bin");
        assertThat(batch[0]).isEqualTo((byte) 3);
        List<String> results = new ArrayList<>();

        List<Command> commands = CommandCodec.decodeCommands(batch);
        for (Command command : commands) {
            results.add(machine.apply(command).result().toString());
            machine.checkInvariants();
        }

        assertThat(commands.get(0)).isEqualTo(new Command.OpenSession("open-4", 15_000, "anonymous", HASH));
        assertThat(((Command.OpenSession) commands.get(0)).quotaIdentity()).isEqualTo("anonymous");
        List<String> printed = new String(resource("results-by-the-previous-release.txt"), StandardCharsets.UTF_8)
                .lines().map(line -> line.substring(line.lastIndexOf(" -> ") + 4)).toList();
        assertThat(results).as("each command's result, as that release printed it")
                .isEqualTo(printed.subList(printed.size() - results.size(), printed.size()));
        assertThat(LockMachineFixture.snapshot(machine))
                .isEqualTo(LockMachineFixture.snapshot(restore("snapshot-after.bin")));
        assertThat(machine.describe("db/rw").orElseThrow().holder()).isEqualTo(new FencingToken("db/rw", 3));
        // Session 2 holds jobs/held and db/rw is 4's; 4 holds solo/a and solo/b and the permit: all anonymous.
        assertThat(machine.usage("anonymous")).isEqualTo(new IdentityUsage(2, 5, 0));
        assertThat(machine.usage("carol")).isEqualTo(IdentityUsage.NONE);
    }

    @Test
    void writeSnapshot_ofVersionThreeState_writesVersionFourThatReadsBackEqual() throws IOException {
        LockStateMachine machine = restore("snapshot-before.bin");

        byte[] rewritten = LockMachineFixture.snapshot(machine);
        LockStateMachine again = LockStateMachine.readSnapshot(
                new DataInputStream(new ByteArrayInputStream(rewritten)), Limits.DEFAULT);

        assertThat(rewritten[0]).isEqualTo((byte) 4);
        assertThat(again.sessions()).isEqualTo(machine.sessions());
        assertThat(again.list("", 10)).isEqualTo(machine.list("", 10));
        assertThat(again.usageByIdentity()).isEqualTo(machine.usageByIdentity());
        Applied shared = again.apply(new Command.Acquire(2, HASH, "db/rw2", "r", false, LockMode.SHARED));
        assertThat(shared.result()).isInstanceOf(Result.Granted.class);
    }

    private static LockStateMachine restore(String name) throws IOException {
        byte[] bytes = resource(name);
        assertThat(bytes[0]).as("snapshot version of " + name).isEqualTo((byte) 3);
        LockStateMachine machine = LockStateMachine.readSnapshot(
                new DataInputStream(new ByteArrayInputStream(bytes)), Limits.DEFAULT);
        machine.checkInvariants();
        return machine;
    }

    private static byte[] resource(String name) {
        try (InputStream in = VersionThreeCompatibilityTest.class.getResourceAsStream("/v3/" + name)) {
            assertThat(in).as("test resource v3/" + name).isNotNull();
            return in.readAllBytes();
        } catch (IOException e) {
            throw new AssertionError(e);
        }
    }
}
