package io.fencer.kafka;

import io.fencer.adapter.internal.RefusalCounter;
import io.fencer.core.FencingToken;
import io.fencer.core.LockNames;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Deserializer;

/**
 * A Kafka consumer that hands the application only records whose fencing token is not stale: per partition and per
 * lock it keeps the highest token accepted, and refuses a record that carries a lower one (written by a holder that
 * was superseded, after the newer holder's records), reporting each refusal.
 *
 * <pre>{@code
 * try (FencedConsumer<String, String> consumer = FencedConsumer.create(config, keys, values, Set.of("orders"))) {
 *     consumer.subscribe(List.of("orders"));
 *     FencedRecords<String, String> polled = consumer.poll(Duration.ofSeconds(1));
 *     polled.accepted().forEach(this::apply);
 *     polled.refused().forEach(r -> log.warn(r.diagnose()));
 *     consumer.commit();   // offsets and the accepted tokens, in one commit
 * }
 * }</pre>
 *
 * <p>The accepted tokens are durable with the offsets: {@link #commit()} commits each partition's offset with its
 * fence as the offset's metadata, and a consumer assigned the partition (after a restart or a rebalance) reads the
 * fence back with the offset. So the fence is always the one of the records before the committed offset: a
 * consumer that crashes re-reads the records after the commit with the fence they were judged against, and judges
 * them the same. (A compacted topic of fences would be a second write, not atomic with the offset commit.)
 *
 * <p>Why per partition: Kafka orders records within a partition only, so "stale" means "a lower token after a higher
 * one in the same partition's log". Send a lock's records to one partition (key them by the lock) to fence them all
 * against each other. The consumer reads committed records only ({@code isolation.level=read_committed}), so a
 * fenced-out {@link FencedProducer}'s transaction never reaches it; the token check catches stale records that
 * reach the log another way. Not thread-safe, as {@link KafkaConsumer}.
 */
public final class FencedConsumer<K, V> implements AutoCloseable {
    /** The most locks one consumer fences. */
    public static final int LOCKS_MAX = 32;
    /** The longest offset metadata the fences may take, in characters: the broker's default limit. */
    public static final int METADATA_CHARS_MAX = 4096;

    private final KafkaConsumer<K, V> consumer;
    private final Set<String> locks;
    private final Map<TopicPartition, PartitionFence> fences = new HashMap<>();
    private final Map<TopicPartition, Long> nextOffsets = new HashMap<>();
    private long refusedCount;
    private final RefusalCounter refusals;

    private FencedConsumer(Map<String, Object> config, Deserializer<K> keys, Deserializer<V> values,
            Set<String> locks, RefusalCounter refusals) {
        this.locks = checkLocks(locks);
        this.refusals = refusals;
        Map<String, Object> settings = new HashMap<>(Objects.requireNonNull(config, "config"));
        require(settings, ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        require(settings, ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        if (settings.get(ConsumerConfig.GROUP_ID_CONFIG) == null) {
            throw new IllegalArgumentException("config has no group.id: the fences are committed with the group's"
                    + " offsets");
        }
        this.consumer = new KafkaConsumer<>(settings, Objects.requireNonNull(keys, "keys"),
                Objects.requireNonNull(values, "values"));
    }

    /**
     * Creates a consumer fencing the tokens of {@code locks}; records of other locks are refused
     * ({@link RefusedRecord.Reason#OTHER_LOCK}).
     *
     * @param config the Kafka consumer configuration with a {@code group.id}; {@code isolation.level} is set to
     *     {@code read_committed} and {@code enable.auto.commit} to false (other values are refused)
     * @param locks 1 to {@value #LOCKS_MAX} lock names whose fences fit {@value #METADATA_CHARS_MAX} characters
     * @throws IllegalArgumentException naming the setting or limit that does not hold
     */
    public static <K, V> FencedConsumer<K, V> create(Map<String, Object> config, Deserializer<K> keys,
            Deserializer<V> values, Set<String> locks) {
        return new FencedConsumer<>(config, keys, values, locks, new RefusalCounter(null, "kafka"));
    }

    /**
     * As {@link #create(Map, Deserializer, Deserializer, Set)}, counting refused records into {@code registry} as
     * {@code fencer_adapter_refusals_total{adapter="kafka", scope=<the record's topic>, reason}}, reason
     * {@code stale_token}, {@code scope_mismatch} (another lock's token), {@code mode_mismatch} (a shared grant's),
     * {@code invalid_argument} (a malformed sequencer) or {@code unstamped} (no sequencer). One series per subscribed
     * topic and reason (the first 1,000 topics; later ones count as {@code scope="_other"}).
     */
    public static <K, V> FencedConsumer<K, V> create(Map<String, Object> config, Deserializer<K> keys,
            Deserializer<V> values, Set<String> locks, MeterRegistry registry) {
        return new FencedConsumer<>(config, keys, values, locks,
                new RefusalCounter(Objects.requireNonNull(registry, "registry"), "kafka"));
    }

    /** Returns the reason tag of a refused record, in the words of the store's refusal counter. */
    private static String reasonTag(RefusedRecord.Reason reason) {
        return switch (reason) {
            case STALE -> "stale_token";
            case OTHER_LOCK -> "scope_mismatch";
            case SHARED_MODE -> "mode_mismatch";
            case MALFORMED -> "invalid_argument";
            case UNSTAMPED -> "unstamped";
        };
    }

    private static Set<String> checkLocks(Set<String> locks) {
        Objects.requireNonNull(locks, "locks");
        if (locks.isEmpty() || locks.size() > LOCKS_MAX) {
            throw new IllegalArgumentException("a fenced consumer fences 1 to " + LOCKS_MAX + " locks, got "
                    + locks.size());
        }
        Set<String> checked = new TreeSet<>();
        for (String lock : locks) {
            checked.add(LockNames.check("lock", lock));
        }
        int chars = PartitionFence.encodedCharsMax(checked);
        if (chars > METADATA_CHARS_MAX) {
            throw new IllegalArgumentException("the fences of " + checked.size() + " locks may take " + chars
                    + " characters of offset metadata, more than " + METADATA_CHARS_MAX);
        }
        return Set.copyOf(checked);
    }

    private static void require(Map<String, Object> settings, String key, String value) {
        Object given = settings.get(key);
        if (given != null && !given.toString().equals(value)) {
            throw new IllegalArgumentException("config sets " + key + "=" + given + "; a fenced consumer needs "
                    + value);
        }
        settings.put(key, value);
    }

    /** Subscribes to {@code topics}; the fences of each partition are read back when it is assigned. */
    public void subscribe(Collection<String> topics) {
        consumer.subscribe(topics, new ConsumerRebalanceListener() {
            @Override
            public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                restore(partitions);
            }

            @Override
            public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                forget(partitions);
            }

            @Override
            public void onPartitionsLost(Collection<TopicPartition> partitions) {
                forget(partitions);
            }
        });
    }

    private void restore(Collection<TopicPartition> partitions) {
        Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(Set.copyOf(partitions));
        for (TopicPartition partition : partitions) {
            OffsetAndMetadata offset = committed.get(partition);
            fences.put(partition, PartitionFence.decode(partition.toString(), offset == null ? null
                    : offset.metadata(), locks));
        }
    }

    private void forget(Collection<TopicPartition> partitions) {
        // The next owner reads the fence committed with the offset: what this consumer judged after its last
        // commit is judged again, against the same fence.
        for (TopicPartition partition : partitions) {
            fences.remove(partition);
            nextOffsets.remove(partition);
        }
    }

    /**
     * Polls once and judges every record in its partition's order: records whose token the fence admits are
     * returned as accepted (and advance the fence), the others as refused.
     */
    public FencedRecords<K, V> poll(Duration timeout) {
        ConsumerRecords<K, V> records = consumer.poll(timeout);
        restoreMissing(records);
        List<ConsumerRecord<K, V>> accepted = new ArrayList<>();
        List<RefusedRecord> refused = new ArrayList<>();
        for (TopicPartition partition : records.partitions()) {
            PartitionFence fence = fences.get(partition);
            for (ConsumerRecord<K, V> record : records.records(partition)) {
                RefusedRecord refusal = fence.judge(record);
                if (refusal == null) {
                    accepted.add(record);
                } else {
                    refused.add(refusal);
                    refusals.count(record.topic(), reasonTag(refusal.reason()));
                }
                nextOffsets.put(partition, record.offset() + 1);
            }
        }
        refusedCount += refused.size();
        return new FencedRecords<>(accepted, refused);
    }

    /**
     * Restores the fence of each polled partition that has none: its restore failed when it was assigned (the listener
     * threw, and Kafka keeps the assignment), and an empty fence would admit what the committed one refuses. When that
     * fails again, every polled partition is rewound to its first polled record, so that nothing is skipped, and the
     * failure is thrown: the consumer judges nothing until it can read the committed fences.
     */
    private void restoreMissing(ConsumerRecords<K, V> records) {
        List<TopicPartition> missing = records.partitions().stream().filter(p -> !fences.containsKey(p)).toList();
        if (missing.isEmpty()) {
            return;
        }
        try {
            restore(missing);
        } catch (RuntimeException e) {
            for (TopicPartition partition : records.partitions()) {
                consumer.seek(partition, records.records(partition).get(0).offset());
            }
            throw e;
        }
    }

    /**
     * Commits, for every partition polled since its assignment, the offset after its last polled record with its
     * fence as the offset's metadata. Call it after the application has applied the accepted records.
     */
    public void commit() {
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        nextOffsets.forEach((partition, next) ->
                offsets.put(partition, new OffsetAndMetadata(next, fences.get(partition).encode())));
        if (!offsets.isEmpty()) {
            consumer.commitSync(offsets);
        }
    }

    /**
     * Returns the highest token of {@code lock} the partition has accepted, or {@link FencingToken#NONE} (also for a
     * partition not assigned to this consumer).
     */
    public long accepted(TopicPartition partition, String lock) {
        PartitionFence fence = fences.get(partition);
        return fence == null ? FencingToken.NONE : fence.accepted(lock);
    }

    /** Returns how many records this consumer has refused since it was created. */
    public long refusedCount() {
        return refusedCount;
    }

    /** Closes the Kafka consumer without committing. */
    @Override
    public void close() {
        consumer.close();
    }
}
