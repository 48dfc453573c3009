package io.fencer.server.locks;

import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;

/**
 * The session keeper's log of expiries: each session's expiry, and each failed one, at DEBUG as it happens, and at
 * INFO (WARN for failures) one summary line per scan that had any, with the count and the first few session ids. An
 * expiry storm (tens of thousands of sessions abandoned together) thus logs a line per wave of
 * {@link SessionKeeper#EXPIRIES_IN_FLIGHT_MAX}, not a line per session; a lone expiry reads as before. Thread-safe:
 * expiries are noted by the keeper's scanner, failures by whichever thread answers the proposal.
 */
final class ExpiryLog {
    /** The most session ids a summary line names. */
    static final int EXAMPLE_IDS_MAX = 5;

    private final Logger log;
    private final Tally expired = new Tally();
    private final Tally failed = new Tally();
    private Object firstFailure; // guarded by this

    ExpiryLog(Logger log) {
        this.log = log;
    }

    /** Notes that the expiry of {@code sessionId}, whose lease of {@code ttlMillis} ran out, is proposed. */
    void expiring(long sessionId, long ttlMillis) {
        log.debug("session {} expires: no keepalive within its ttl of {} ms", sessionId, ttlMillis);
        synchronized (this) {
            expired.add(sessionId, ttlMillis);
        }
    }

    /** Notes that the expiry of {@code sessionId} failed ({@code reason}: the error or the refusal). */
    void failed(long sessionId, Object reason) {
        log.debug("expiring session {} failed: {}", sessionId, String.valueOf(reason));
        synchronized (this) {
            if (failed.count == 0) {
                firstFailure = reason;
            }
            failed.add(sessionId, 0);
        }
    }

    /** Logs what was noted since the last call, at most a line for the expiries and one for the failures. */
    void flush() {
        Tally expiredNow;
        Tally failedNow;
        Object reason;
        synchronized (this) {
            if (expired.count == 0 && failed.count == 0) {
                return;
            }
            expiredNow = expired.takeCopy();
            failedNow = failed.takeCopy();
            reason = firstFailure;
            firstFailure = null;
        }
        if (expiredNow.count == 1) {
            log.info("session {} expires: no keepalive within its ttl of {} ms", expiredNow.ids.get(0),
                    expiredNow.lastTtlMillis);
        } else if (expiredNow.count > 1) {
            log.info("{} sessions expire: no keepalive within their ttl (sessions {}; each at DEBUG)",
                    expiredNow.count, expiredNow.examples());
        }
        // The reason as text: slf4j takes a Throwable in the last place for the stack trace, not for the message.
        String why = String.valueOf(reason);
        if (failedNow.count == 1) {
            log.warn("expiring session {} failed: {}", failedNow.ids.get(0), why);
        } else if (failedNow.count > 1) {
            log.warn("expiring {} sessions failed (sessions {}; each at DEBUG), the first: {}", failedNow.count,
                    failedNow.examples(), why);
        }
    }

    /** A count of sessions with the first few of their ids. */
    private static final class Tally {
        int count;
        final List<Long> ids = new ArrayList<>(EXAMPLE_IDS_MAX);
        long lastTtlMillis;

        void add(long sessionId, long ttlMillis) {
            count++;
            lastTtlMillis = ttlMillis;
            if (ids.size() < EXAMPLE_IDS_MAX) {
                ids.add(sessionId);
            }
        }

        /** Returns a copy and empties this one. */
        Tally takeCopy() {
            Tally copy = new Tally();
            copy.count = count;
            copy.ids.addAll(ids);
            copy.lastTtlMillis = lastTtlMillis;
            count = 0;
            ids.clear();
            return copy;
        }

        /** The ids named, and how many more there were. */
        String examples() {
            StringBuilder text = new StringBuilder();
            for (Long id : ids) {
                text.append(text.length() == 0 ? "" : ", ").append(id);
            }
            return count > ids.size() ? text.append(" and ").append(count - ids.size()).append(" more").toString()
                    : text.toString();
        }
    }
}
