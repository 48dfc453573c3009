package io.fencer.server.locks;

import io.fencer.api.v1.RevokedGrant;
import io.fencer.core.FencingToken;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The grants revoked from sessions that are still open, as this peer applied them, so that every keepalive and Renew
 * answer tells a revoked holder (locks.proto, KeepAliveResponse.revoked). A session's list is repeated in every answer
 * until the session ends, so an answer lost on the way costs nothing; it holds the {@link #PER_SESSION_MAX} most
 * recent revocations, so the memory is bounded by the open sessions. Written on the apply thread, read by the calls'
 * threads: each list is replaced whole, never changed in place.
 */
final class RevokedGrants {
    /** The revocations remembered per session: the most recent ones; a holder revoked more often learns of these. */
    static final int PER_SESSION_MAX = 8;

    private final Map<Long, List<RevokedGrant>> bySession = new ConcurrentHashMap<>();

    /** Records that {@code token}, held by session {@code sessionId}, was revoked by {@code revokedBy}. */
    void revoked(long sessionId, FencingToken token, String revokedBy) {
        RevokedGrant grant = RevokedGrant.newBuilder().setToken(Protos.token(token, null)).setRevokedBy(revokedBy)
                .build();
        bySession.compute(sessionId, (id, kept) -> {
            List<RevokedGrant> next = new ArrayList<>(kept == null ? List.of() : kept);
            next.add(grant);
            if (next.size() > PER_SESSION_MAX) {
                next.remove(0);
            }
            return List.copyOf(next);
        });
    }

    /** Forgets the session's revocations: it ended, and with it every grant it had. */
    void sessionEnded(long sessionId) {
        bySession.remove(sessionId);
    }

    /** Returns the session's revoked grants, oldest first; empty for most sessions. */
    List<RevokedGrant> of(long sessionId) {
        return bySession.getOrDefault(sessionId, List.of());
    }
}
