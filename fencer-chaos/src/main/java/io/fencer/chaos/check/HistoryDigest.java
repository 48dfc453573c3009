package io.fencer.chaos.check;

import io.fencer.chaos.history.HistoryEvent;
import io.fencer.chaos.history.HistoryEvent.Op;
import io.fencer.chaos.history.HistoryEvent.Type;
import io.fencer.chaos.history.HistoryJson;
import io.fencer.chaos.workload.Workload;
import io.fencer.core.ErrorReason;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;

/**
 * What the checker needs from one history, gathered in one pass: acknowledged writes and grants paired with their
 * invocations, the final read, the lock-server kills, and the counts.
 *
 * <p>A process runs one operation at a time, so a completion belongs to the same process's last invocation. An
 * invocation that is followed by another invocation of the same process, or by nothing, was left without a
 * completion (its process was killed): it may or may not have happened.
 */
final class HistoryDigest {
    /** An acknowledged write (counter) or add (set). */
    record Write(long timeMicros, String process, Op op, long token, String value, long revision,
            long counterValue, String setRead) {
    }

    /** An acknowledged acquire that carried a token. */
    record Grant(String process, long token, long invokeMicros, long okMicros) {
    }

    /** A worker's last acknowledged read. */
    private record Read(long token, String value) {
    }

    /**
     * How a stale refusal's message began ({@code StaleTokenException}, {@code StaleWriteException}) in histories
     * written before refusals carried their catalogue reason: only for those is a refusal judged by its message.
     */
    static final String STALE_REFUSAL_BEFORE_REASONS = "stale token";

    final Workload workload;
    /** Acknowledged writes or adds, in completion order. */
    final List<Write> writesAcknowledged = new ArrayList<>();
    /** Acknowledged acquires with a token, in completion order. */
    final List<Grant> grants = new ArrayList<>();
    /** Of {@link #grants}, those whose token is at or below one their process had begun to release before. */
    final List<Grant> regrants = new ArrayList<>();
    /** Kills of a lock server, by time. */
    final NavigableMap<Long, HistoryEvent> failoversByTime = new TreeMap<>();
    long grantsAcknowledged;
    long writesRefused;
    /**
     * Of {@link #writesRefused}, those the store refused as stale: what fencing did. The others (a unit expired
     * during a pause, a full queue) show no fencing, so a run's "stale writes refused" must not count them.
     */
    long writesStale;
    long writesUnknown;
    long pauses;
    /** Kills the harness injected as faults. */
    long kills;
    /** Kills of workers that had not stopped when the run ended ({@link HistoryEvent#END_OF_RUN}): no faults. */
    long killsAtEnd;
    long sessionLosses;
    long failovers;
    /** Kills of the replicated store's leader (the lock group's leader, when the workload's store is replicated). */
    long storeFailovers;
    long partitions;
    long flaky;
    /** Completed membership changes: adds, promotes and removes of lock peers. */
    long membershipChanges;
    /** Membership changes refused (each retried later). */
    long membershipRefused;
    /** The last acknowledged final read, or null when the history has none. */
    HistoryEvent finalRead;
    /** Counter: the final value (0 when the final read found nothing). */
    long finalValue;
    /** Set: the final elements. */
    Set<String> finalElements = Set.of();

    private final Map<String, HistoryEvent> pendingByProcess = new HashMap<>();
    private final Map<String, Read> lastReadByProcess = new HashMap<>();
    /** The highest token each process invoked a release of. */
    private final Map<String, Long> releasedByProcess = new HashMap<>();

    private HistoryDigest(Workload workload) {
        this.workload = workload;
    }

    /**
     * Returns the digest of {@code history}.
     *
     * @throws IllegalArgumentException naming the event when the history makes no sense: out of time order, a
     *     completion with no pending invoke or of another operation, a write of the other workload, an
     *     acknowledged write without a revision, a non-numeric counter value
     */
    static HistoryDigest of(List<HistoryEvent> history, Workload workload) {
        HistoryDigest digest = new HistoryDigest(workload);
        long previousMicros = 0;
        for (HistoryEvent event : history) {
            Objects.requireNonNull(event, "history event");
            if (event.timeMicros() < previousMicros) {
                throw new IllegalArgumentException("history not sorted by time: event at " + event.timeMicros()
                        + " us after one at " + previousMicros + " us: " + HistoryJson.format(event));
            }
            previousMicros = event.timeMicros();
            digest.add(event);
        }
        digest.pendingByProcess.values().forEach(digest::leftWithoutCompletion);
        return digest;
    }

    private void add(HistoryEvent event) {
        switch (event.type()) {
            case INVOKE -> {
                if (event.op() == Op.RELEASE && event.token() != 0) {
                    releasedByProcess.merge(event.process(), event.token(), Math::max);
                }
                HistoryEvent abandoned = pendingByProcess.put(event.process(), event);
                if (abandoned != null) {
                    leftWithoutCompletion(abandoned);
                }
            }
            case INFO -> info(event);
            case OK, FAIL, UNKNOWN -> complete(event);
        }
    }

    private void leftWithoutCompletion(HistoryEvent invoke) {
        if (invoke.op() == Op.WRITE || invoke.op() == Op.ADD) {
            writesUnknown++;
        }
    }

    private void info(HistoryEvent event) {
        switch (event.op()) {
            case PAUSE -> pauses++;
            case PARTITION -> partitions++;
            case FLAKY -> flaky++;
            case ADD_PEER, PROMOTE_PEER, REMOVE_PEER -> membershipChanges++;
            case MEMBERSHIP_REFUSED -> membershipRefused++;
            case SESSION_LOST -> sessionLosses++;
            case KILL -> {
                if (HistoryEvent.END_OF_RUN.equals(event.value())) {
                    killsAtEnd++;
                    return;
                }
                kills++;
                if (HistoryEvent.STORE_LEADER.equals(event.value())) {
                    storeFailovers++;
                }
                if (event.target().startsWith("lock")) {
                    failovers++;
                    failoversByTime.put(event.timeMicros(), event);
                }
            }
            default -> {
                // Resumes, restarts and notes change nothing the checks rely on.
            }
        }
    }

    private void complete(HistoryEvent completion) {
        HistoryEvent invoke = pendingByProcess.get(completion.process());
        // The harness may record its final read as a single ok line, with no invoke before it.
        if (invoke == null && completion.op() != Op.FINAL_READ) {
            throw new IllegalArgumentException("completion with no pending invoke of " + completion.process() + ": "
                    + HistoryJson.format(completion));
        }
        if (invoke != null && invoke.op() != completion.op()) {
            throw new IllegalArgumentException("completion of " + completion.op() + " while the pending invoke of "
                    + completion.process() + " is " + invoke.op() + ": " + HistoryJson.format(completion));
        }
        pendingByProcess.remove(completion.process());
        switch (completion.op()) {
            case ACQUIRE -> acquired(invoke, completion);
            case READ -> {
                if (completion.type() == Type.OK) {
                    lastReadByProcess.put(completion.process(), new Read(tokenOf(invoke, completion),
                            completion.value()));
                }
            }
            case WRITE, ADD -> wrote(invoke, completion);
            case FINAL_READ -> {
                if (completion.type() == Type.OK) {
                    finalRead(completion);
                }
            }
            default -> {
                // Releases and other completions change nothing the checks rely on.
            }
        }
    }

    private void acquired(HistoryEvent invoke, HistoryEvent completion) {
        if (completion.type() != Type.OK) {
            return;
        }
        grantsAcknowledged++;
        long token = tokenOf(invoke, completion);
        if (token != 0) {
            Grant grant = new Grant(completion.process(), token, invoke.timeMicros(), completion.timeMicros());
            grants.add(grant);
            if (token <= releasedByProcess.getOrDefault(completion.process(), 0L)) {
                regrants.add(grant);
            }
        }
    }

    private void wrote(HistoryEvent invoke, HistoryEvent completion) {
        Op expected = workload == Workload.COUNTER ? Op.WRITE : Op.ADD;
        if (completion.op() != expected) {
            throw new IllegalArgumentException(completion.op() + " in a " + workload + " history: "
                    + HistoryJson.format(completion));
        }
        switch (completion.type()) {
            case FAIL -> {
                writesRefused++;
                if (isStaleRefusal(completion)) {
                    writesStale++;
                }
            }
            case UNKNOWN -> writesUnknown++;
            case OK -> writesAcknowledged.add(acknowledged(invoke, completion));
            default -> throw new IllegalStateException("not a completion: " + completion.type());
        }
    }

    /**
     * Whether the store refused {@code refusal} as stale: by its catalogue reason, which a reworded message does not
     * change. A refusal without a reason was written before reasons were recorded (every refusal a worker records
     * now is one of the catalogue's errors, so it has one): its message is all there is.
     */
    static boolean isStaleRefusal(HistoryEvent refusal) {
        if (!refusal.reason().isEmpty()) {
            return ErrorReason.STALE_TOKEN.name().equals(refusal.reason());
        }
        return refusal.error().startsWith(STALE_REFUSAL_BEFORE_REASONS);
    }

    private Write acknowledged(HistoryEvent invoke, HistoryEvent completion) {
        if (completion.revision() == 0) {
            throw new IllegalArgumentException("acknowledged " + completion.op() + " without a revision: "
                    + HistoryJson.format(completion));
        }
        long token = tokenOf(invoke, completion);
        String value = completion.value().isEmpty() ? invoke.value() : completion.value();
        long counterValue = 0;
        String setRead = null;
        if (workload == Workload.COUNTER) {
            counterValue = counterValue(value, completion);
        } else {
            Read read = lastReadByProcess.get(completion.process());
            // Only a read under the same grant is the set this add extended.
            setRead = read != null && read.token() == token ? read.value() : null;
        }
        return new Write(completion.timeMicros(), completion.process(), completion.op(), token, value,
                completion.revision(), counterValue, setRead);
    }

    private void finalRead(HistoryEvent completion) {
        finalRead = completion;
        if (workload == Workload.COUNTER) {
            finalValue = completion.value().isEmpty() ? 0 : counterValue(completion.value(), completion);
        } else {
            finalElements = elements(completion.value());
        }
    }

    /** Returns the elements of a set as read: joined by commas, empty when absent. */
    static Set<String> elements(String joined) {
        Set<String> elements = new LinkedHashSet<>();
        Arrays.stream(joined.split(",")).filter(element -> !element.isEmpty()).forEach(elements::add);
        return elements;
    }

    private static long tokenOf(HistoryEvent invoke, HistoryEvent completion) {
        return completion.token() != 0 || invoke == null ? completion.token() : invoke.token();
    }

    private static long counterValue(String value, HistoryEvent event) {
        try {
            return Long.parseLong(value);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("non-numeric counter value '" + value + "': "
                    + HistoryJson.format(event), e);
        }
    }
}
