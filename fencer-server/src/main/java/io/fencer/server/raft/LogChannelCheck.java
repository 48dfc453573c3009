package io.fencer.server.raft;

import java.util.Arrays;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Tells whether the Raft log appends through Fencer's replacement of Ratis's {@code BufferedWriteChannel}, which
 * remembers a segment's size instead of asking the file system before every entry (its comment says why: on Linux
 * 6.13 and later that question costs each commit a second block write). Ratis's own class still works, only slower,
 * so a class path that loads it gets a warning, not a refusal.
 */
final class LogChannelCheck {
    private static final Logger LOG = LoggerFactory.getLogger(LogChannelCheck.class);
    static final String CHANNEL_CLASS = "org.apache.ratis.server.raftlog.segmented.BufferedWriteChannel";
    /** The field only Fencer's class has. */
    static final String MARKER_FIELD = "knownSizeBytes";

    private LogChannelCheck() {}

    /** Returns true when the class loaded under Ratis's name is Fencer's. */
    static boolean fencersChannelLoaded() {
        try {
            return isFencers(Class.forName(CHANNEL_CLASS, false, LogChannelCheck.class.getClassLoader()));
        } catch (ReflectiveOperationException | LinkageError e) {
            return false;
        }
    }

    /** Returns true when {@code channel}, a class of Ratis's name, is Fencer's replacement. */
    static boolean isFencers(Class<?> channel) {
        return Arrays.stream(channel.getDeclaredFields()).anyMatch(field -> field.getName().equals(MARKER_FIELD));
    }

    /** Logs a warning when Ratis's own channel class is the one loaded. */
    static void warnIfRatisChannel() {
        if (!fencersChannelLoaded()) {
            LOG.warn("the raft log appends through Ratis's own {} (ratis-server is before fencer-server on the class"
                    + " path): each commit may write the log file's inode as well as the entry", CHANNEL_CLASS);
        }
    }
}
