package io.fencer.server.http;

import io.fencer.core.Ticker;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * The last {@value #REFUSALS_MAX} writes and unit commits the store on this peer refused, in memory, for the console's
 * feed ({@code POST /console/refusals}): when, the scope, the reason, and the presented and accepted tokens. No value
 * and no secret is kept, and nothing survives a restart: the metrics and the log keep the count and the history. The
 * server tells it each refusal from the store's metrics ({@code store.RefusalListener}); each one gets the next
 * position (from 1), by which a page asks for those after the last it saw, as it does for Watch events.
 *
 * <p>Thread-safe: a refusal is recorded on the thread that answers the write, in constant time under one lock.
 */
public final class RecentRefusals {
    /** The most refusals kept; an older one is dropped when a new one comes. */
    public static final int REFUSALS_MAX = 256;

    /** One refusal; {@code presented} and {@code accepted} are {@code lock#value} texts, or null. */
    record Refusal(long position, long atNanos, String scope, String reason, String presented, String accepted) {}

    /** The refusals from a position on, the position to ask for next, and the ticker's reading when read. */
    record Read(List<Refusal> refusals, long next, long nowNanos) {}

    private final Ticker ticker;
    private final Refusal[] ring = new Refusal[REFUSALS_MAX];
    /** The position the next refusal gets; the ring holds positions [max(1, next - REFUSALS_MAX), next). */
    private long next = 1;

    /** @param ticker times each refusal, which the console shows by its age */
    public RecentRefusals(Ticker ticker) {
        this.ticker = Objects.requireNonNull(ticker, "ticker");
    }

    /** Records a refusal (the signature of {@code store.RefusalListener#refused}). */
    public void record(String scope, String reason, String presented, String accepted) {
        Objects.requireNonNull(scope, "scope");
        Objects.requireNonNull(reason, "reason");
        long atNanos = ticker.nanoTime();
        synchronized (ring) {
            ring[(int) (next % REFUSALS_MAX)] = new Refusal(next, atNanos, scope, reason, presented, accepted);
            next++;
        }
    }

    /**
     * Returns the refusals kept from {@code position} on, oldest first (position 0 or 1: all kept; one past the
     * last: none), and the position to ask for next.
     */
    Read from(long position) {
        synchronized (ring) {
            long oldest = Math.max(1, next - REFUSALS_MAX);
            List<Refusal> refusals = new ArrayList<>();
            for (long at = Math.max(position, oldest); at < next; at++) {
                refusals.add(ring[(int) (at % REFUSALS_MAX)]);
            }
            return new Read(refusals, next, ticker.nanoTime());
        }
    }
}
