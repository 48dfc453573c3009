package io.fencer.server.raft;

import java.io.IOException;

/**
 * A call another peer received and refused (its Ratis server threw, or it does not know the call): the link itself
 * is sound, so it is kept, unlike after a timeout or a closed connection.
 */
final class PeerRefusedException extends IOException {
    private static final long serialVersionUID = 1L;

    PeerRefusedException(String message) {
        super(message);
    }
}
