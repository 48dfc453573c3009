package io.fencer.server.store;

import io.fencer.core.FencerException;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LockNames;
import io.fencer.core.ModeMismatchException;
import io.fencer.core.ScopeMismatchException;
import io.fencer.core.StaleTokenException;
import io.fencer.core.Ticker;
import io.fencer.server.net.RefusalLog;
import io.fencer.store.WriteResult;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The store's Prometheus metrics: {@code fencer_store_writes_total} by outcome (accepted, stale, error) and the
 * latency of admitted-or-refused writes and unit commits, {@code fencer_store_write_seconds}, fsync included; and
 * {@code fencer_store_refusals_total} by {@code scope} and {@code reason} (the error catalogue's reason in lower case:
 * {@code stale_token}, {@code scope_mismatch}, {@code mode_mismatch}, {@code bad_token_signature},
 * {@code permission_denied}, {@code invalid_argument} ...; {@code internal} for an error outside the catalogue).
 * Two gauges show what the store holds in the heap against its bounds: {@code fencer_store_units_buffered_bytes}, the
 * bytes the open units buffer ({@code unitBytesBufferedMax}), and {@code fencer_store_requests_queued_bytes}, the bytes
 * of the requests the workers hold ({@code requestBytesQueuedMax}).
 *
 * <p>The scope tag is bounded: the first {@link #SCOPES_TAGGED_MAX} scopes refused keep their own series, later ones
 * are counted as {@value #OTHER_SCOPES}, and a name that is not a valid scope (refused for that very reason) as
 * {@value #INVALID_SCOPE}, so that a client sending many or garbage scope names cannot grow the registry.
 *
 * <p>Each refusal is also logged at INFO under {@value #REFUSALS_LOGGER}, with the error's message, which names the
 * presented token ({@code stale token orders#41 refused by scope 'orders': accepted token is orders#42}): joined to the
 * grant log's line of that token ({@code io.fencer.server.grants}), it says whose write was refused. A holder retrying
 * a refused write in a loop logs one line per {@link #REFUSAL_LOG_INTERVAL}: the log keys its lines by scope and
 * presented token (by scope and reason for refusals that are not stale tokens), and the next line counts those left
 * out.
 *
 * <p>Each refusal of a valid scope is told to a {@link RefusalListener} too, with the presented and accepted tokens
 * the error names: the web console's feed of recent refusals.
 */
final class StoreMetrics {
    /** The logger of refused writes and commits. */
    static final String REFUSALS_LOGGER = "io.fencer.server.store.refusals";
    /** The shortest time between two log lines about refusals of one scope and presented token. */
    static final Duration REFUSAL_LOG_INTERVAL = Duration.ofSeconds(10);
    /** The most (scope, token) pairs whose log intervals are remembered. */
    static final int REFUSALS_LOGGED_MAX = 10_000;
    private static final Logger REFUSALS = LoggerFactory.getLogger(REFUSALS_LOGGER);

    /** The most scopes with a refusal series of their own ({@code storeRefusalScopesTaggedMax}). */
    static final int SCOPES_TAGGED_MAX = 1_000;
    static final String OTHER_SCOPES = "_other";
    static final String INVALID_SCOPE = "_invalid";

    private final MeterRegistry registry;
    private final Set<String> scopesTagged = ConcurrentHashMap.newKeySet();
    private final Counter accepted;
    private final Counter stale;
    private final Counter errors;
    private final Timer writeTimer;
    private final RefusalLog refusalLog;
    private final RefusalListener listener;

    StoreMetrics(MeterRegistry registry, Ticker ticker) {
        this(registry, ticker, RefusalListener.NONE);
    }

    StoreMetrics(MeterRegistry registry, Ticker ticker, RefusalListener listener) {
        this.registry = registry;
        this.listener = java.util.Objects.requireNonNull(listener, "listener");
        this.refusalLog = new RefusalLog(ticker, REFUSAL_LOG_INTERVAL, REFUSALS_LOGGED_MAX);
        accepted = outcome(registry, "accepted");
        stale = outcome(registry, "stale");
        errors = outcome(registry, "error");
        writeTimer = Timer.builder("fencer.store.write").description("Writes and unit commits, fsync included")
                .publishPercentileHistogram()
                .register(registry);
    }

    /** Registers the gauges of the bytes the open units buffer and the requests the workers hold (see the class doc). */
    void gaugeHeldBytes(UnitBytes units, RequestBytes requests) {
        Gauge.builder("fencer.store.units.buffered", units, UnitBytes::held).baseUnit("bytes")
                .description("Bytes the store's open units buffer, bounded by unitBytesBufferedMax").register(registry);
        Gauge.builder("fencer.store.requests.queued", requests, RequestBytes::held).baseUnit("bytes")
                .description("Bytes of the requests the store's workers hold, waiting or being served, bounded by"
                        + " requestBytesQueuedMax").register(registry);
    }

    private static Counter outcome(MeterRegistry registry, String outcome) {
        return Counter.builder("fencer.store.writes").description("Writes and unit commits by outcome")
                .tag("outcome", outcome).register(registry);
    }

    /** Runs a write or commit to {@code scope}, counting its outcome and timing it. */
    WriteResult timeWrite(String scope, Supplier<WriteResult> write) {
        long startNanos = System.nanoTime();
        try {
            WriteResult result = write.get();
            recordWrite(scope, startNanos, null);
            return result;
        } catch (RuntimeException e) {
            recordWrite(scope, startNanos, e);
            throw e;
        }
    }

    /**
     * Counts the outcome of a write or commit to {@code scope} begun at {@code startNanos} (System.nanoTime), a refusal
     * by its scope and reason, and times it.
     */
    void recordWrite(String scope, long startNanos, Throwable failure) {
        if (failure != null) {
            String reason = failure instanceof FencerException fencer ? fencer.reason().name().toLowerCase(Locale.ROOT)
                    : "internal";
            Counter.builder("fencer.store.refusals").description("Store writes and unit commits refused, by scope and"
                    + " reason").tag("scope", scopeTag(scope)).tag("reason", reason).register(registry).increment();
            logRefusal(scope, reason, failure);
            tell(scope, reason, failure);
        }
        if (failure == null) {
            accepted.increment();
        } else if (failure instanceof StaleTokenException) {
            stale.increment();
        } else {
            errors.increment();
        }
        writeTimer.record(System.nanoTime() - startNanos, TimeUnit.NANOSECONDS);
    }

    /** Logs a refusal, unless a line about the same scope and presented token was logged within the interval. */
    private void logRefusal(String scope, String reason, Throwable failure) {
        if (!REFUSALS.isInfoEnabled()) {
            return;
        }
        String shownScope = InvalidArgumentException.printable(String.valueOf(scope));
        long leftOut = refusalLog.admit(failure instanceof StaleTokenException stale
                ? shownScope + "#" + stale.presented() : shownScope + " " + reason);
        if (leftOut >= 0) {
            // Messages are printed escaped: a scope name must not forge log lines.
            REFUSALS.info("refused a write to scope '{}' ({}): {}{}", shownScope, reason,
                    InvalidArgumentException.printable(String.valueOf(failure.getMessage())),
                    leftOut == 0 ? "" : "; " + leftOut + " more like it left out of the log since its last line");
        }
    }

    /** Tells the listener of a refusal of a valid scope, with the tokens its error names. */
    private void tell(String scope, String reason, Throwable failure) {
        if (!validScope(scope)) {
            return;
        }
        String presented = null;
        String accepted = null;
        if (failure instanceof StaleTokenException stale) {
            presented = scope + "#" + stale.presented();
            accepted = scope + "#" + stale.accepted();
        } else if (failure instanceof ModeMismatchException mode) {
            presented = scope + "#" + mode.presented();
        } else if (failure instanceof ScopeMismatchException mismatch) {
            presented = mismatch.tokenLock() + "#" + mismatch.token().value();
        }
        listener.refused(scope, reason, presented, accepted);
    }

    private static boolean validScope(String scope) {
        try {
            LockNames.check("scope", scope);
            return true;
        } catch (InvalidArgumentException | NullPointerException e) {
            return false;
        }
    }

    /** Returns the scope tag of a refusal: the scope, or one of the bounded stand-ins (see the class doc). */
    private String scopeTag(String scope) {
        if (!validScope(scope)) {
            return INVALID_SCOPE;
        }
        if (scopesTagged.contains(scope)) {
            return scope;
        }
        synchronized (scopesTagged) {
            if (scopesTagged.size() >= SCOPES_TAGGED_MAX) {
                return OTHER_SCOPES;
            }
            scopesTagged.add(scope);
            return scope;
        }
    }
}
