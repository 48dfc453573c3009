package io.fencer.server;

import io.fencer.server.raft.GroupSecret;
import java.nio.file.Path;
import java.util.Objects;

/**
 * How the peers of a group prove to each other, on the Raft port, that they are its peers: by a shared secret (a
 * handshake on every connection proves it, see {@link GroupSecret}), by their TLS certificates alone, or not at all.
 * With TLS configured ({@link ServerConfig#tls()}) the certificates are checked whatever this says; a secret is then
 * checked as well.
 *
 * <p>The default ({@link ServerConfig#defaults}) is the secret in {@code dataDir/raft.secret}, made at the first start:
 * right for a group of one peer, which no other peer calls. Every peer of a larger group must be given the same
 * secret: the same file ({@link #secretFile}), or the same bytes ({@link #secret}, for peers in one process).
 */
public final class PeerAuth {
    /** The name of a peer's own secret file in its data directory, the default. */
    public static final String DATA_DIR_SECRET_FILE = "raft.secret";
    /**
     * The name of the secret file a peer of a larger group uses by default, beside (not in) its data directory: peers
     * started on one host with sibling data directories share it without being told.
     */
    public static final String GROUP_SECRET_FILE = "fencer-group.secret";

    /** How peers authenticate each other. */
    public enum Mode {
        /** A secret in a file, read (or made, when absent) at start. */
        SECRET_FILE,
        /** A secret given in memory. */
        SECRET,
        /** The peers' TLS certificates alone: needs TLS with a CA. */
        TLS_ONLY,
        /** No authentication on the Raft port (without TLS, anyone who can reach it can act as a peer). */
        INSECURE
    }

    private final Mode mode;
    private final Path file;
    private final GroupSecret secret;

    private PeerAuth(Mode mode, Path file, GroupSecret secret) {
        this.mode = mode;
        this.file = file;
        this.secret = secret;
    }

    /** The secret in {@code file}, which is made with a new random secret at start when it does not exist. */
    public static PeerAuth secretFile(Path file) {
        return new PeerAuth(Mode.SECRET_FILE, Objects.requireNonNull(file, "file"), null);
    }

    /** The secret {@code secret}, e.g. one {@link GroupSecret#generate()} shared by peers in one process. */
    public static PeerAuth secret(GroupSecret secret) {
        return new PeerAuth(Mode.SECRET, null, Objects.requireNonNull(secret, "secret"));
    }

    /** The peers' TLS certificates alone; the server refuses to start without TLS and a CA. */
    public static PeerAuth tlsOnly() {
        return new PeerAuth(Mode.TLS_ONLY, null, null);
    }

    /**
     * No authentication: without TLS, anyone who can reach the Raft port can depose the leader and append to the log.
     * For tests, or to keep the behaviour of earlier releases; the server warns at start.
     */
    public static PeerAuth insecure() {
        return new PeerAuth(Mode.INSECURE, null, null);
    }

    /** Returns the default of a server with data in {@code dataDir}: the secret file {@code dataDir/raft.secret}. */
    public static PeerAuth defaultFor(Path dataDir) {
        return secretFile(dataDir.resolve(DATA_DIR_SECRET_FILE));
    }

    public Mode mode() {
        return mode;
    }

    /** Returns the secret file, or null unless {@link Mode#SECRET_FILE}. */
    public Path file() {
        return file;
    }

    /** Returns the secret, or null unless {@link Mode#SECRET}. */
    public GroupSecret secret() {
        return secret;
    }

    /** Returns true when peers prove a group secret (from a file or given). */
    public boolean hasSecret() {
        return mode == Mode.SECRET_FILE || mode == Mode.SECRET;
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof PeerAuth auth && mode == auth.mode && Objects.equals(file, auth.file)
                && Objects.equals(secret, auth.secret);
    }

    @Override
    public int hashCode() {
        return Objects.hash(mode, file);
    }

    /** Names the mode and the file; a secret shows its length only. */
    @Override
    public String toString() {
        return switch (mode) {
            case SECRET_FILE -> "secret file " + file;
            case SECRET -> "secret of " + secret.length() + " bytes";
            case TLS_ONLY -> "TLS certificates alone";
            case INSECURE -> "insecure (no authentication)";
        };
    }
}
