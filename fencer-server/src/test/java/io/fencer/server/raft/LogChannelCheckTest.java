package io.fencer.server.raft;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.URL;
import java.net.URLClassLoader;
import org.junit.jupiter.api.Test;
import org.slf4j.Logger;

/** Which class appends to the Raft log, and whether the check tells Fencer's from Ratis's. */
class LogChannelCheckTest {
    @Test
    void fencersChannelLoaded_onTheServersClassPath_isTrue() {
        // fencer-server's classes come before ratis-server's jar: its replacement is the one Ratis appends through.
        assertThat(LogChannelCheck.fencersChannelLoaded()).isTrue();
    }

    @Test
    void isFencers_ratissOwnClassFromItsJar_isFalse() throws Exception {
        URL ratisServer = Class.forName("org.apache.ratis.server.raftlog.segmented.SegmentedRaftLogWorker")
                .getProtectionDomain().getCodeSource().getLocation();
        URL slf4j = Logger.class.getProtectionDomain().getCodeSource().getLocation();
        assertThat(ratisServer.getPath()).as("the control reads Ratis's own jar").contains("ratis-server");
        try (URLClassLoader ratisOnly = new URLClassLoader(new URL[] {ratisServer, slf4j},
                ClassLoader.getPlatformClassLoader())) {
            Class<?> ratis = Class.forName(LogChannelCheck.CHANNEL_CLASS, false, ratisOnly);
            Class<?> fencers = Class.forName(LogChannelCheck.CHANNEL_CLASS, false,
                    LogChannelCheck.class.getClassLoader());

            assertThat(ratis).as("a class of the same name from another loader").isNotSameAs(fencers);
            assertThat(LogChannelCheck.isFencers(ratis)).isFalse();
            assertThat(LogChannelCheck.isFencers(fencers)).isTrue();
        }
    }
}
