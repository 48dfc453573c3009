package io.fencer.server.raft;

import java.util.HashMap;
import java.util.Map;

/**
 * The connections of the Raft port that are not admitted yet (their TLS or their {@link PeerHandshake} is under
 * way), counted in all and per remote address, so that strangers cannot hold more than a few of them and never the
 * slots of admitted peers. A peer's own connection stays unadmitted for a round trip or two; a stranger's for at
 * most {@link PeerHandshake#TIMEOUT}. Thread-safe.
 */
final class UnadmittedConnections {
    /** The most connections not yet admitted at once, from every address together. */
    static final int CONNECTIONS_MAX = 16;
    /** The most connections not yet admitted at once from one address (peers on one host share their address). */
    static final int PER_ADDRESS_MAX = 4;

    private final int connectionsMax;
    private final int perAddressMax;
    private final Map<String, Integer> byAddress = new HashMap<>(); // guarded by this; at most connectionsMax keys
    private int open; // guarded by this

    UnadmittedConnections() {
        this(CONNECTIONS_MAX, PER_ADDRESS_MAX);
    }

    UnadmittedConnections(int connectionsMax, int perAddressMax) {
        if (connectionsMax < 1 || perAddressMax < 1 || perAddressMax > connectionsMax) {
            throw new IllegalArgumentException("connectionsMax " + connectionsMax + " and perAddressMax "
                    + perAddressMax + " must be positive, the first at least the second");
        }
        this.connectionsMax = connectionsMax;
        this.perAddressMax = perAddressMax;
    }

    /** One connection's place, given back once (when it is admitted or closed, whichever comes first). */
    final class Slot {
        private final String address;
        private boolean released; // guarded by UnadmittedConnections.this

        private Slot(String address) {
            this.address = address;
        }

        void release() {
            synchronized (UnadmittedConnections.this) {
                if (released) {
                    return;
                }
                released = true;
                open--;
                byAddress.computeIfPresent(address, (key, count) -> count == 1 ? null : count - 1);
            }
        }
    }

    /** Returns a place for a connection from {@code address}, or null when the bound in all or per address is met. */
    synchronized Slot take(String address) {
        int fromAddress = byAddress.getOrDefault(address, 0);
        if (open >= connectionsMax || fromAddress >= perAddressMax) {
            return null;
        }
        open++;
        byAddress.put(address, fromAddress + 1);
        return new Slot(address);
    }

    /** Describes the bounds, for a refusal's log line. */
    String describeBounds() {
        return perAddressMax + " per address, " + connectionsMax + " in all";
    }

    /** Returns how many connections hold a place (for tests). */
    synchronized int open() {
        return open;
    }
}
