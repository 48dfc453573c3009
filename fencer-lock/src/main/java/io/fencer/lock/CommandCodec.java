package io.fencer.lock;

import java.util.List;

/**
 * The binary form of commands in the replicated log, and of results in replies. A log entry holds a batch
 * of commands, applied in order. Versioned by a leading byte so later versions can read older logs.
 */
public final class CommandCodec {
    private CommandCodec() {}

    public static byte[] encodeCommands(List<Command> commands) {
        throw new UnsupportedOperationException("not yet");
    }

    public static List<Command> decodeCommands(byte[] bytes) {
        throw new UnsupportedOperationException("not yet");
    }

    public static byte[] encodeResults(List<Result> results) {
        throw new UnsupportedOperationException("not yet");
    }

    public static List<Result> decodeResults(byte[] bytes) {
        throw new UnsupportedOperationException("not yet");
    }

}
