package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.gson.JsonParser;
import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.Session;
import io.fencer.lock.Command;
import io.fencer.lock.CommandCodec;
import io.fencer.lock.SecretHash;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Poisoned log entries against a real {@code fencer server} whose Raft port lets a stranger pose as the leader
 * ({@link ForgedLeader}): {@code --insecure-raft}, since a default server authenticates its peers and refuses the
 * stranger before any frame (RaftPortForgeryProcessTest); this is the defence behind that door. The entry the attack first used, a command without a client id, made
 * Ratis's updater throw before the state machine saw it: the division closed while {@code /healthz} still answered,
 * and every restart replayed the entry and closed it again, leaving only log surgery or an empty data directory (and
 * with it every lock's token counter reset). Now the Raft port refuses an entry Ratis could not apply before it
 * reaches the log, and the state machine applies an entry that does not decode, or a command that breaks the rules,
 * as a no-op on every replica: the peer keeps serving, and after kill -9 and a restart on the same data directory it
 * serves again with its token counters intact.
 */
class PoisonedEntryProcessTest {
    /**
     * The server's arguments beyond its data directory and ports, in one place: the attack needs a Raft port that
     * lets strangers in, which only {@code --insecure-raft} gives.
     */
    static final String[] SERVER_ARGUMENTS = {"--insecure-raft"};
    private static final Duration WAIT = Duration.ofSeconds(60);
    /** A term far above any the server reached by itself: the forged leader's claim to lead. */
    private static final long FORGED_TERM = 1_000;

    @TempDir
    Path dir;
    private final List<AutoCloseable> toClose = new ArrayList<>();

    @AfterEach
    void closeAll() throws Exception {
        for (int i = toClose.size() - 1; i >= 0; i--) {
            toClose.get(i).close();
        }
    }

    @Test
    void forgedLeader_appendsEntriesNoReplicaCanApply_thePeerServesOn_andAfterKill9AndRestartTokensStillRise()
            throws Exception {
        FencerProcess.Ports ports = FencerProcess.Ports.free();
        FencerProcess server = startServer("server", ports);
        FencerClient fencer = Fencer.newBuilder().endpoints(ports.endpoint()).callTimeout(Duration.ofSeconds(30))
                .build();
        toClose.add(fencer);
        long highest = grantAndRelease(fencer, 0, 3);
        String peerId = JsonParser.parseString(FencerProcess.health(ports.admin())).getAsJsonObject().get("id")
                .getAsString();

        ForgedLeader.Appended withoutClientId;
        ForgedLeader.Appended accepted;
        try (ForgedLeader evil = ForgedLeader.connect(ports.raft(), peerId)) {
            // A well-formed command: what the entry lacks is only the client id Ratis reads before applying it.
            byte[] expire = CommandCodec.encodeCommands(List.of(new Command.ExpireSession(1, false)));
            withoutClientId = evil.appendAtEnd(FORGED_TERM, ForgedLeader.stateMachineEntry(ByteString.EMPTY, expire));
            // With a client id, entries that do not decode or break the rules: these reach the log.
            byte[] garbage = {CommandCodec.VERSION, 0x7f, 0x00, 0x13, 0x37};
            byte[] sessionZero = CommandCodec.encodeCommands(List.of(new Command.Acquire(0,
                    SecretHash.of("forged"), "orders", "forged-request", false)));
            accepted = evil.appendAtEnd(FORGED_TERM,
                    ForgedLeader.stateMachineEntry(ForgedLeader.CLIENT_ID, garbage),
                    ForgedLeader.stateMachineEntry(ForgedLeader.CLIENT_ID, sessionZero));
        }

        server.awaitHealthy(ports.admin()); // the forged leader fell silent: the peer elects itself again
        highest = grantAndRelease(fencer, highest, 2);
        assertThat(withoutClientId.reply().refusal()).as("the entry without a client id: %s", withoutClientId)
                .contains("client id of 0 bytes");
        // The control: the forged leader's other entries did reach the log, in its term, and were committed.
        assertThat(accepted.reply().succeeded()).as("the forged entries: %s", accepted).isTrue();
        assertThat(accepted.reply().answer().getTerm()).as("the term the peer took").isEqualTo(FORGED_TERM);
        String metrics = FencerProcess.metrics(ports.admin());
        assertThat(refused(metrics, "raft-port")).as("refused by the Raft port in:%n%s", metrics).isEqualTo(1);
        assertThat(refused(metrics, "undecodable")).isEqualTo(1);
        assertThat(refused(metrics, "malformed")).isEqualTo(1);

        server.kill9();
        FencerProcess restarted = startServer("server-restarted", ports);
        highest = grantAndRelease(fencer, highest, 2);
        String replayed = FencerProcess.metrics(ports.admin());
        assertThat(refused(replayed, "undecodable")).as("refused again by the replay in:%n%s", replayed).isEqualTo(1);
        assertThat(refused(replayed, "malformed")).isEqualTo(1);
        assertThat(restarted.isAlive()).isTrue();
        assertThat(highest).isPositive();
    }

    private FencerProcess startServer(String name, FencerProcess.Ports ports) throws Exception {
        FencerProcess server = FencerProcess.server(name, dir.resolve("data"), ports, SERVER_ARGUMENTS);
        toClose.add(server);
        server.awaitHealthy(ports.admin());
        return server;
    }

    /**
     * Opens a session, and {@code times} times acquires and releases the lock "orders", checking that each token
     * exceeds {@code highest} and the one before it; returns the last token.
     */
    private static long grantAndRelease(FencerClient fencer, long highest, int times) throws Exception {
        long last = highest;
        try (Session session = fencer.openSession(Duration.ofSeconds(10))) {
            for (int i = 0; i < times; i++) {
                try (Grant grant = session.lock("orders").acquire(WAIT)) {
                    assertThat(grant.token().value()).as("token %d of this round", i).isGreaterThan(last);
                    last = grant.token().value();
                }
            }
        }
        return last;
    }

    /** Returns the count of {@code fencer_raft_entries_refused_total} for {@code why}, or -1 when absent. */
    private static double refused(String metrics, String why) {
        Matcher count = Pattern.compile("(?m)^fencer_raft_entries_refused_total\\{[^}]*why=\"" + Pattern.quote(why)
                + "\"[^}]*\\} (\\S+)$").matcher(metrics);
        return count.find() ? Double.parseDouble(count.group(1)) : -1;
    }
}
