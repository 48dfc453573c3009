package io.fencer.server.raft;

import org.apache.ratis.proto.RaftProtos.AppendEntriesRequestProto;
import org.apache.ratis.proto.RaftProtos.LogEntryProto;

/**
 * What Ratis itself needs of a log entry to apply it, checked on the Raft port before an AppendEntries reaches Ratis
 * ({@link PeerRpc}).
 *
 * <p>Why at the door and not in the state machine: Ratis's updater reads a state-machine entry's client id as a
 * 16-byte UUID (for its retry cache and the reply to a waiting client) <em>before</em> it hands the entry to
 * {@link RaftLockStateMachine}, and an entry without a body at all fails the same way. The exception it throws ends
 * the updater and closes the division; the entry stays in the log, so every restart replays it and closes the
 * division again. The state machine never sees such an entry and cannot refuse it, so it must never be appended.
 * No honest leader writes one: Ratis makes every state-machine entry from a client request, which carries a client
 * id; configuration and metadata entries carry none and need none. Refusing the whole call costs an honest leader
 * nothing, and a buggy or hostile one gets an answer naming the entry instead of a follower it bricks.
 */
final class LogEntryShapes {
    /** The length of a client id: a UUID. */
    static final int CLIENT_ID_BYTES = 16;

    private LogEntryShapes() {}

    /**
     * Returns why Ratis could not apply an entry of {@code request} (the first such entry, by its index and term),
     * or null when it can apply every one.
     */
    static String refusal(AppendEntriesRequestProto request) {
        for (LogEntryProto entry : request.getEntriesList()) {
            String refusal = refusal(entry);
            if (refusal != null) {
                return "log entry " + entry.getIndex() + " (term " + entry.getTerm() + ") " + refusal;
            }
        }
        return null;
    }

    /** Returns why Ratis could not apply {@code entry}, or null when it can. */
    static String refusal(LogEntryProto entry) {
        return switch (entry.getLogEntryBodyCase()) {
            case STATEMACHINELOGENTRY -> {
                int bytes = entry.getStateMachineLogEntry().getClientId().size();
                yield bytes == CLIENT_ID_BYTES ? null : "has a client id of " + bytes + " bytes, not "
                        + CLIENT_ID_BYTES + ": Ratis cannot apply it";
            }
            case CONFIGURATIONENTRY, METADATAENTRY -> null;
            case LOGENTRYBODY_NOT_SET -> "has no body (no command, configuration or metadata): Ratis cannot apply it";
        };
    }
}
