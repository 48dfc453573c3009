package io.fencer.kafka;

import io.fencer.core.FencingToken;
import java.util.Objects;

/**
 * A record {@link FencedConsumer} did not hand to the application, and why.
 *
 * @param topic the record's topic
 * @param partition the record's partition
 * @param offset the record's offset
 * @param reason why it was refused
 * @param presented the token the record carries, or null when it carries none that parses
 * @param accepted the token the partition had accepted for the record's lock when it was refused, or null when none
 * @param detail what was wrong, in one sentence (for a malformed sequencer, the parser's sentence)
 */
public record RefusedRecord(String topic, int partition, long offset, Reason reason, FencingToken presented,
        FencingToken accepted, String detail) {

    /** Why a record was refused. */
    public enum Reason {
        /** Its token is lower than one the partition has accepted for its lock: it was written by a superseded holder. */
        STALE,
        /** It carries no {@value FencedProducer#SEQUENCER_HEADER} header: it was not sent by a fenced producer. */
        UNSTAMPED,
        /** Its header is not a sequencer (malformed, or more than one). */
        MALFORMED,
        /** Its token belongs to a lock this consumer does not fence. */
        OTHER_LOCK,
        /** Its token is a shared (reader's) grant, which may not write. */
        SHARED_MODE
    }

    public RefusedRecord {
        Objects.requireNonNull(topic, "topic");
        Objects.requireNonNull(reason, "reason");
        Objects.requireNonNull(detail, "detail");
    }

    /**
     * Explains the refusal in sentences for a log or an operator: what the record carried, what the partition had
     * accepted, and what most likely happened. The consumer cannot ask the lock service (it depends on no client);
     * to tell a superseded holder from a lock service that lost state, validate {@link #presented()} with the lock
     * service's Validate, as the store client's {@code StaleWriteException.diagnose()} does.
     */
    public String diagnose() {
        String where = "record " + topic + "-" + partition + "@" + offset;
        return switch (reason) {
            case STALE -> where + " carries " + presented + ", but the partition had already accepted " + accepted
                    + ": the producer of " + presented + " was superseded (its holder was most likely paused past its"
                    + " lease, and sent after the next holder's records) and its record was not handed over";
            case UNSTAMPED -> where + " carries no " + FencedProducer.SEQUENCER_HEADER + " header: it was sent by a"
                    + " producer outside the fence, whose order against the lock's holders is unknown";
            case MALFORMED -> where + " has a " + FencedProducer.SEQUENCER_HEADER + " header that is not one"
                    + " sequencer: " + detail;
            case OTHER_LOCK -> where + " carries " + presented + ", a token of lock '" + presented.lock()
                    + "', which this consumer does not fence: " + detail;
            case SHARED_MODE -> where + " carries " + presented + ", a reader's (shared) grant, which may not write";
        };
    }
}
