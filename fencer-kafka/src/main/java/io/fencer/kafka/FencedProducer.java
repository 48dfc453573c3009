package io.fencer.kafka;

import io.fencer.core.FencingToken;
import io.fencer.core.LockMode;
import io.fencer.core.LockNames;
import io.fencer.core.ModeMismatchException;
import io.fencer.core.ScopeMismatchException;
import io.fencer.core.StaleTokenException;
import io.fencer.core.FencePolicy;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.InterruptException;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.serialization.Serializer;

/**
 * A Kafka producer for the holder of one lock: every record it sends carries the grant's sequencer in the header
 * {@value #SEQUENCER_HEADER}, and each grant makes it the only live producer for that lock.
 *
 * <pre>{@code
 * FencedProducer<String, String> producer = FencedProducer.create("orders", config, keys, values);
 * try (Grant grant = session.lock("orders").acquire(wait)) {
 *     producer.onGrant(grant.token());           // fences every producer of "orders" started before, in any process
 *     producer.send(new ProducerRecord<>("orders", "42", "shipped"));   // one transaction, stamped
 * }
 * }</pre>
 *
 * <p>How: the producer is transactional, with the {@code transactional.id} {@value #TRANSACTIONAL_ID_PREFIX} +
 * the lock name, and {@link #onGrant} starts a new Kafka producer and calls {@code initTransactions()}. The broker
 * then bumps the id's epoch, aborts any transaction an older producer left open, and refuses the older producer's
 * every later send or commit with {@link ProducerFencedException}. So a holder paused past its lease, resumed after
 * the next holder's {@link #onGrant}, cannot commit a record, and consumers reading committed records
 * ({@code isolation.level=read_committed}, as {@link FencedConsumer} does) never see one it sent. The sequencer header
 * is the second line: {@link FencedConsumer} refuses a record whose token is lower than one it has accepted, which
 * catches stale records that reach the log another way (a producer outside this class, another id).
 *
 * <p>Not thread-safe: one holder, one thread. The broker's fencing needs Kafka's transactions (a broker with a
 * transaction state topic, and ACLs that let the holders use the id).
 */
public final class FencedProducer<K, V> implements AutoCloseable {
    /** The header that carries the sequencer of the grant a record was sent under, UTF-8. */
    public static final String SEQUENCER_HEADER = "fencer-sequencer";
    /** The prefix of the transactional id of a lock's producers; the lock name follows it. */
    public static final String TRANSACTIONAL_ID_PREFIX = "fencer.";
    /** The most records one {@link #send(List)} sends in its transaction. */
    public static final int RECORDS_PER_TRANSACTION_MAX = 10_000;

    private final String lock;
    private final Map<String, Object> config;
    private final Serializer<K> keySerializer;
    private final Serializer<V> valueSerializer;
    private KafkaProducer<K, V> producer;
    private FencingToken token;
    private byte[] sequencer;

    private FencedProducer(String lock, Map<String, Object> config, Serializer<K> keys, Serializer<V> values) {
        this.lock = LockNames.check("lock", lock);
        this.config = new HashMap<>(Objects.requireNonNull(config, "config"));
        this.keySerializer = Objects.requireNonNull(keys, "keys");
        this.valueSerializer = Objects.requireNonNull(values, "values");
        if (this.config.containsKey(ProducerConfig.TRANSACTIONAL_ID_CONFIG)) {
            throw new IllegalArgumentException("config sets transactional.id '"
                    + this.config.get(ProducerConfig.TRANSACTIONAL_ID_CONFIG) + "'; a fenced producer derives it from"
                    + " the lock name (" + transactionalId(lock) + ")");
        }
        this.config.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId(lock));
        this.config.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
    }

    /**
     * Creates the producer of lock {@code lock}; it sends nothing until {@link #onGrant}.
     *
     * @param config the Kafka producer configuration (bootstrap servers, timeouts...) without
     *     {@code transactional.id}, which is derived from the lock name; the serializers are given here
     * @throws IllegalArgumentException when {@code config} sets {@code transactional.id}
     */
    public static <K, V> FencedProducer<K, V> create(String lock, Map<String, Object> config, Serializer<K> keys,
            Serializer<V> values) {
        return new FencedProducer<>(lock, config, keys, values);
    }

    /** Returns the transactional id of the producers of {@code lock}: {@value #TRANSACTIONAL_ID_PREFIX} + lock. */
    public static String transactionalId(String lock) {
        return TRANSACTIONAL_ID_PREFIX + LockNames.check("lock", lock);
    }

    /**
     * Takes up a new grant of the lock: closes the previous Kafka producer, starts one and calls
     * {@code initTransactions()}, which fences every producer of the lock started before, here or elsewhere. Call it
     * after every grant, before the first send.
     *
     * @throws ScopeMismatchException when {@code token} belongs to another lock; nothing changed
     * @throws ModeMismatchException when {@code token} is a shared (reader's) grant; nothing changed
     * @throws StaleTokenException when {@code token} is lower than the grant this producer already took up
     * @throws KafkaException when the broker cannot be reached or refuses the id (the producer is then closed)
     */
    public void onGrant(FencingToken token) {
        Objects.requireNonNull(token, "token");
        if (!token.lock().equals(lock)) {
            throw new ScopeMismatchException(lock, token);
        }
        if (token.mode() != LockMode.EXCLUSIVE) {
            throw new ModeMismatchException(lock, token.value(), token.mode());
        }
        if (this.token != null && token.value() < this.token.value()) {
            throw new StaleTokenException(lock, token.value(), this.token.value(), FencePolicy.AT_LEAST);
        }
        closeProducer();
        KafkaProducer<K, V> next = new KafkaProducer<>(config, keySerializer, valueSerializer);
        try {
            next.initTransactions();
        } catch (RuntimeException e) {
            next.close(Duration.ZERO);
            throw e;
        }
        this.producer = next;
        this.token = token;
        this.sequencer = token.sequencer().getBytes(StandardCharsets.UTF_8);
    }

    /** Sends {@code record} stamped with the grant's sequencer, in a transaction of its own; see {@link #send(List)}. */
    public void send(ProducerRecord<K, V> record) {
        send(List.of(record));
    }

    /**
     * Sends {@code records}, each stamped with the grant's sequencer, in one transaction: all are committed or none.
     * Returns once the transaction is committed.
     *
     * @throws ProducerFencedException when another producer of the lock has started since ({@link #onGrant}
     *     elsewhere): a newer grant's, so this holder was superseded, or a superseded holder's that took up its grant
     *     late (the broker orders producers by when they started, consumers order records by token); nothing of this
     *     transaction is visible to read-committed consumers, and the producer is closed (take up a grant to send
     *     again)
     * @throws IllegalStateException when no grant was taken up, or the producer was fenced or closed
     * @throws IllegalArgumentException when a record already carries the header {@value #SEQUENCER_HEADER}, or there
     *     are more than {@value #RECORDS_PER_TRANSACTION_MAX} records
     * @throws KafkaException saying the records may or may not have been committed when the commit got no answer
     *     within {@code max.block.ms} (or was interrupted): the broker may still commit them, all or none, and no
     *     abort can follow a commit; the Kafka producer is closed at once, and the next {@link #onGrant} settles the
     *     transaction (the broker finishes a commit it took, aborts any other) before anything else is sent
     * @throws KafkaException for other failures; the transaction was aborted when it could be
     */
    public void send(List<ProducerRecord<K, V>> records) {
        Objects.requireNonNull(records, "records");
        if (records.size() > RECORDS_PER_TRANSACTION_MAX) {
            throw new IllegalArgumentException(records.size() + " records in one transaction, more than "
                    + RECORDS_PER_TRANSACTION_MAX);
        }
        for (ProducerRecord<K, V> record : records) {
            if (record.headers().lastHeader(SEQUENCER_HEADER) != null) {
                throw new IllegalArgumentException("record for topic " + record.topic() + " already carries a "
                        + SEQUENCER_HEADER + " header; the fenced producer stamps it");
            }
        }
        if (producer == null) {
            throw new IllegalStateException("no grant of lock '" + lock + "' taken up (call onGrant after each"
                    + " grant), or the producer was fenced or closed");
        }
        boolean committing = false;
        try {
            producer.beginTransaction();
            for (ProducerRecord<K, V> record : records) {
                producer.send(stamped(record));
            }
            committing = true;
            producer.commitTransaction();
        } catch (ProducerFencedException | InvalidProducerEpochException e) {
            closeProducer();
            throw fenced(e);
        } catch (KafkaException e) {
            if (isFenced(e)) {
                closeProducer();
                throw fenced(e);
            }
            if (committing && (e instanceof TimeoutException || e instanceof InterruptException)) {
                throw maybeCommitted(e, records.size());
            }
            abortQuietly(e);
            throw e;
        }
    }

    /** True when {@code e} or one of its causes says a newer producer of the id has started. */
    private static boolean isFenced(Throwable e) {
        for (Throwable cause = e; cause != null; cause = cause.getCause()) {
            if (cause instanceof ProducerFencedException || cause instanceof InvalidProducerEpochException) {
                return true;
            }
        }
        return false;
    }

    private ProducerRecord<K, V> stamped(ProducerRecord<K, V> record) {
        ProducerRecord<K, V> copy = new ProducerRecord<>(record.topic(), record.partition(), record.timestamp(),
                record.key(), record.value(), record.headers());
        copy.headers().add(SEQUENCER_HEADER, sequencer.clone());
        return copy;
    }

    private ProducerFencedException fenced(KafkaException cause) {
        ProducerFencedException fenced = new ProducerFencedException("the producer of " + token + " (transactional"
                + " id " + transactionalId(lock) + ") was fenced: another producer of the lock started since, most"
                + " likely a newer grant's (this holder was superseded, probably paused past its lease), or a"
                + " superseded holder's that took up its grant late, whose records consumers refuse by token; if this"
                + " holder still holds the lock, take up its grant again to fence that one. Nothing of this"
                + " transaction was committed");
        fenced.initCause(cause);
        return fenced;
    }

    /**
     * The commit was asked for and no answer came in time: the broker may have taken it and may still commit, and the
     * Kafka producer refuses an abort while a commit is pending, so the error says the outcome is unknown. The
     * producer is closed without waiting: the commit is in the broker's hands or lost, waiting tells the caller
     * nothing more, and a graceful close would wait for the answer that is missing.
     */
    private KafkaException maybeCommitted(KafkaException cause, int records) {
        KafkaException unknown = new KafkaException("the commit of " + records + " record(s) under " + token
                + " (transactional id " + transactionalId(lock) + ") "
                + (cause instanceof InterruptException ? "was interrupted" : "got no answer within max.block.ms")
                + ": they may or may not have been committed (all of them or none); the producer is closed, and the"
                + " next onGrant settles the transaction before anything else is sent", cause);
        KafkaProducer<K, V> closing = producer;
        producer = null;
        try {
            closing.close(Duration.ZERO);
        } catch (KafkaException e) { // an interrupted thread's close may fail
            unknown.addSuppressed(e);
        }
        return unknown;
    }

    /**
     * Aborts the failed transaction; when the Kafka producer refuses (a KafkaException, or an IllegalStateException
     * from a producer in a state that takes no abort), the refusal joins {@code cause}, which stays the error the
     * caller sees, and the producer is closed: the next {@link #onGrant} starts afresh.
     */
    private void abortQuietly(KafkaException cause) {
        try {
            producer.abortTransaction();
        } catch (KafkaException | IllegalStateException e) {
            cause.addSuppressed(e);
            closeProducer();
        }
    }

    /** Returns the grant this producer sends under, or null before the first {@link #onGrant}. */
    public FencingToken token() {
        return token;
    }

    public String lock() {
        return lock;
    }

    private void closeProducer() {
        if (producer != null) {
            producer.close(Duration.ofSeconds(5));
            producer = null;
        }
    }

    /** Closes the Kafka producer; an open transaction is aborted by the broker. */
    @Override
    public void close() {
        closeProducer();
    }
}
