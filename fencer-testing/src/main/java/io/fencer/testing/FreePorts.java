package io.fencer.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Free ports on 127.0.0.1 for servers whose ports are named before they bind them (peers list each other's ports; a
 * stopped server restarts on its own), chosen below the kernel's ephemeral range so that no outgoing connection can
 * take one meanwhile.
 *
 * <p>A port is free when it is chosen, not promised: another process may bind it before the server does. Below the
 * ephemeral range only an explicit bind can take it, and the binds there in a test run are those of servers started
 * on ports chosen here, by this JVM or by another test JVM running at the same time (a module's two surefire forks, a
 * second build on the same machine). So no port is handed out twice while the JVM that chose it lives:
 * <ul>
 *   <li>within one JVM, a set of the ports it handed out (test classes running at once, as fencer-it runs two);</li>
 *   <li>across JVMs, a lock on the port's byte of one shared file, {@code fencer-ports.lock} in the temporary
 *       directory (a record lock of the operating system, which the kernel drops when the process ends, however it
 *       ends; the file stays empty, and a link there is not followed). Without it the two forks of a module drew
 *       from the same range blind, and a group's server once failed to bind a port the other fork had just
 *       chosen.</li>
 * </ul>
 * A server that stopped may restart on its port a minute later, when a fresh draw could otherwise pick it for another
 * test. Where the shared file cannot be opened (another user's, not writable), only the first rule holds; a process
 * that held every byte of it would only push each draw to an ephemeral port, as when the range is used up.
 */
public final class FreePorts {
    /** The first port of the kernel's default ephemeral range (ip_local_port_range: 32768 60999). */
    private static final int EPHEMERAL_PORT_FIRST = 32_768;
    private static final int CHOSEN_PORT_FIRST = 20_000;
    private static final int CHOSEN_PORT_ATTEMPTS = 200;
    /** More ports than any test group needs; a larger count is a mistake, not a need. */
    private static final int COUNT_MAX = 1_000;
    private static final String LOOPBACK = "127.0.0.1";
    /** Ports this JVM has handed out; below the ephemeral range there are 12,768, far more than one suite uses. */
    private static final Set<Integer> CHOSEN = ConcurrentHashMap.newKeySet();
    /** Past this many, a draw may repeat an earlier port rather than search a range nearly used up. */
    private static final int CHOSEN_REMEMBERED_MAX = 8_000;
    private static final Path CLAIMS_FILE = Path.of(System.getProperty("java.io.tmpdir"), "fencer-ports.lock");
    /** The shared file whose byte at offset {@code port} is locked by the JVM that chose it; null when unavailable. */
    private static final FileChannel CLAIMS = openClaims();
    /** The locks this JVM holds, kept for its lifetime; the kernel drops them when it exits. */
    private static final List<FileLock> HELD = new ArrayList<>();

    private FreePorts() {}

    /** Returns one port that was free a moment ago, as {@code choose(1)[0]}. */
    public static int one() {
        return choose(1)[0];
    }

    /**
     * Returns {@code count} distinct ports that were free a moment ago, below the ephemeral range where it can (see
     * {@link #bindBelowEphemeralRange}). All are held at once while they are chosen, so they differ.
     *
     * @throws IllegalArgumentException when {@code count} is not between 1 and 1,000
     */
    public static int[] choose(int count) {
        if (count < 1 || count > COUNT_MAX) {
            throw new IllegalArgumentException("count must be between 1 and " + COUNT_MAX + ": " + count);
        }
        List<ServerSocket> sockets = new ArrayList<>();
        try {
            int[] ports = new int[count];
            for (int i = 0; i < count; i++) {
                ServerSocket socket = bindBelowEphemeralRange();
                sockets.add(socket);
                ports[i] = socket.getLocalPort();
            }
            return ports;
        } catch (IOException e) {
            throw new UncheckedIOException("no free port", e);
        } finally {
            for (ServerSocket socket : sockets) {
                try {
                    socket.close();
                } catch (IOException ignored) {
                    // nothing to do
                }
            }
        }
    }

    /**
     * Binds a free port below the ephemeral range. A server is started on its ports after they are chosen (and
     * restarted on them after a kill); a port from the ephemeral range may meanwhile be taken as the local port of
     * an outgoing connection of any process (a bind failure seen under load, by the chaos harness and by the
     * three-peer server tests), while ports below that range are only ever taken by an explicit bind. Falls back to
     * an ephemeral port.
     */
    private static ServerSocket bindBelowEphemeralRange() throws IOException {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        for (int attempt = 0; attempt < CHOSEN_PORT_ATTEMPTS; attempt++) {
            int port = random.nextInt(CHOSEN_PORT_FIRST, EPHEMERAL_PORT_FIRST);
            if (CHOSEN.size() < CHOSEN_REMEMBERED_MAX && !CHOSEN.add(port)) {
                continue; // handed out before, maybe to a test still running beside this one
            }
            if (claimedByAnotherProcess(port)) {
                continue; // handed out by another test JVM that is still running
            }
            ServerSocket socket = new ServerSocket();
            try {
                socket.bind(new InetSocketAddress(LOOPBACK, port));
                return socket;
            } catch (IOException taken) {
                socket.close();
            }
        }
        ServerSocket fallback = new ServerSocket();
        fallback.bind(new InetSocketAddress(LOOPBACK, 0));
        return fallback;
    }

    /**
     * Claims {@code port} for this JVM unless another process holds it, and returns whether one does. A port this JVM
     * claimed before stays its own (past {@link #CHOSEN_REMEMBERED_MAX} a draw may repeat one); where the shared file
     * is unavailable no port is held elsewhere.
     */
    static boolean claimedByAnotherProcess(int port) {
        if (CLAIMS == null) {
            return false;
        }
        synchronized (HELD) {
            try {
                FileLock lock = CLAIMS.tryLock(port, 1, false);
                if (lock == null) {
                    return true;
                }
                HELD.add(lock);
                return false;
            } catch (OverlappingFileLockException heldHere) {
                return false;
            } catch (IOException e) {
                throw new UncheckedIOException("cannot lock port " + port + "'s byte of " + CLAIMS_FILE, e);
            }
        }
    }

    /** Opens the shared claims file; never closed, since closing it would drop every claim this JVM holds. */
    private static FileChannel openClaims() {
        try {
            return FileChannel.open(CLAIMS_FILE, StandardOpenOption.CREATE, StandardOpenOption.READ,
                    StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS);
        } catch (IOException | SecurityException e) {
            return null;
        }
    }
}
