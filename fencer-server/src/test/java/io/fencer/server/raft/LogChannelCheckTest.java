package io.fencer.server.raft;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** Which class appends to the Raft log on fencer-server's own class path. */
class LogChannelCheckTest {
    @Test
    void fencersChannelLoaded_onTheServersClassPath_isTrue() {
        // fencer-server's classes come before ratis-server's jar: its replacement is the one Ratis appends through.
        assertThat(LogChannelCheck.fencersChannelLoaded()).isTrue();
    }
}
