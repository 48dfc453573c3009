package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.Isolated;

/**
 * A peer that is down costs its group's log one line per peer per interval, not a stack trace per retry: three
 * server processes, a follower killed with SIGKILL, and the leader's log read for longer than one interval.
 */
@org.junit.jupiter.api.Tag(Soak.TAG) // 20 s of watching a survivor's log; the full suite keeps RefusalLogTest (the per-key rate limit)
@Isolated
class PeerDownLogProcessTest {
    /** Longer than PeerRpc's 10 s interval, so that the second line, with the count left out, is due. */
    private static final Duration WATCHED = Duration.ofMillis(11_500);

    @TempDir
    Path dir;
    private final List<FencerProcess> peers = new ArrayList<>();
    private final List<FencerProcess.Ports> ports = new ArrayList<>();

    @AfterEach
    void stop() {
        peers.forEach(FencerProcess::close);
    }

    @Test
    void peerKilled_leaderLogsOneLinePerIntervalWithACountAndNoStackTrace() throws Exception {
        startGroup();
        int leader = leaderIndex();
        int victim = (leader + 1) % 3;
        String victimId = "n" + (victim + 1);
        int logBefore = peers.get(leader).logText().length();

        peers.get(victim).kill9();
        FencerProcess.pause(WATCHED.toMillis());

        String logged = peers.get(leader).logText().substring(logBefore);
        assertThat(peers.get(leader).isAlive()).isTrue();
        assertThat(logged).as("the control: the leader did call the dead peer and failed")
                .contains("calls to peer " + victimId + " fail: cannot reach peer " + victimId)
                .contains("connection refused")
                .contains("more failed calls since the last such line");
        List<String> aboutVictim = logged.lines().filter(line -> line.contains(victimId)).toList();
        assertThat(aboutVictim).as("lines naming %s in %s ms:%n%s", victimId, WATCHED.toMillis(), logged)
                .hasSizeLessThanOrEqualTo(4);
        assertThat(logged).as("no stack trace, no per-retry warning from Ratis")
                .doesNotContain("\tat ", "Failed to appendEntries", "Failed to start");
        assertThat(logged.length()).as("bytes logged in %s ms", WATCHED.toMillis()).isLessThan(4_000);
    }

    private void startGroup() throws Exception {
        StringBuilder group = new StringBuilder();
        for (int i = 0; i < 3; i++) {
            FencerProcess.Ports p = FencerProcess.Ports.free();
            ports.add(p);
            group.append(i == 0 ? "" : ",").append("n").append(i + 1).append("=127.0.0.1:").append(p.client())
                    .append(':').append(p.raft());
        }
        for (int i = 0; i < 3; i++) {
            peers.add(FencerProcess.server("n" + (i + 1), dir.resolve("n" + (i + 1)), ports.get(i),
                    "--id", "n" + (i + 1), "--peers", group.toString(), "--no-store",
                    "--raft-secret-file", dir.resolve("raft.secret").toString()));
        }
        for (int i = 0; i < 3; i++) {
            peers.get(i).awaitHealthy(ports.get(i).admin());
        }
    }

    private int leaderIndex() {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (System.nanoTime() < deadline) {
            for (int i = 0; i < peers.size(); i++) {
                if (FencerProcess.health(ports.get(i).admin()).contains("\"role\":\"LEADER\"")) {
                    return i;
                }
            }
            FencerProcess.pause(100);
        }
        throw new AssertionError("no leader within 60 s");
    }
}
