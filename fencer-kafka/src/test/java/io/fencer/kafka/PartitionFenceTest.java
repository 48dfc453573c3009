package io.fencer.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.core.FencingToken;
import io.fencer.core.ScopeMismatchException;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;

/** The consumer's fence and the adapters' argument checks, without a broker. */
class PartitionFenceTest {
    private static final Set<String> LOCKS = Set.of("orders", "billing");
    private long offset;

    private ConsumerRecord<String, String> record(String... sequencers) {
        ConsumerRecord<String, String> record = new ConsumerRecord<>("t", 0, offset++, "k", "v");
        for (String sequencer : sequencers) {
            record.headers().add(FencedProducer.SEQUENCER_HEADER, sequencer.getBytes(StandardCharsets.UTF_8));
        }
        return record;
    }

    private static String seq(String lock, long value) {
        return new FencingToken(lock, value).sequencer();
    }

    @Test
    void judge_tokensInLogOrder_admitsEqualAndHigherAndRefusesLowerPerLock() {
        PartitionFence fence = new PartitionFence(LOCKS);

        assertThat(fence.judge(record(seq("orders", 5)))).isNull();
        assertThat(fence.judge(record(seq("orders", 5)))).as("the holder sends many records").isNull();
        assertThat(fence.judge(record(seq("billing", 1)))).as("locks are fenced apart").isNull();
        RefusedRecord refused = fence.judge(record(seq("orders", 4)));

        assertThat(refused.reason()).isEqualTo(RefusedRecord.Reason.STALE);
        assertThat(refused.presented()).isEqualTo(new FencingToken("orders", 4));
        assertThat(refused.accepted()).isEqualTo(new FencingToken("orders", 5));
        assertThat(refused.offset()).isEqualTo(3);
        assertThat(fence.accepted("orders")).isEqualTo(5);
    }

    @Test
    void judge_badHeaders_refusesWithTheirReasonAndLeavesTheFence() {
        PartitionFence fence = new PartitionFence(LOCKS);

        assertThat(fence.judge(record()).reason()).isEqualTo(RefusedRecord.Reason.UNSTAMPED);
        assertThat(fence.judge(record("garbage")).reason()).isEqualTo(RefusedRecord.Reason.MALFORMED);
        assertThat(fence.judge(record("garbage")).detail()).contains("malformed sequencer 'garbage'");
        assertThat(fence.judge(record(seq("orders", 2), seq("orders", 3))).reason())
                .isEqualTo(RefusedRecord.Reason.MALFORMED);
        assertThat(fence.judge(record(seq("invoices", 9))).reason()).isEqualTo(RefusedRecord.Reason.OTHER_LOCK);
        assertThat(fence.accepted("orders")).isZero();
        assertThat(fence.accepted("invoices")).isZero();
    }

    @Test
    void decode_fenceOfALockThisConsumerDoesNotFence_keepsItForTheNextConsumerThatDoes() {
        PartitionFence both = new PartitionFence(LOCKS);
        both.judge(record(seq("orders", 41)));
        both.judge(record(seq("billing", 9)));

        // A consumer of the same group fencing fewer locks (a rolling deploy, a rollback) commits the partition.
        PartitionFence ordersOnly = PartitionFence.decode("t-0", both.encode(), Set.of("orders"));
        assertThat(ordersOnly.judge(record(seq("billing", 3))).reason()).isEqualTo(RefusedRecord.Reason.OTHER_LOCK);
        ordersOnly.judge(record(seq("orders", 42)));
        PartitionFence restored = PartitionFence.decode("t-0", ordersOnly.encode(), LOCKS);

        assertThat(restored.accepted("orders")).isEqualTo(42);
        assertThat(restored.accepted("billing")).as("billing's fence, carried through the other consumer's commit")
                .isEqualTo(9);
        assertThat(restored.judge(record(seq("billing", 3)))).as("billing's stale record").isNotNull()
                .extracting(RefusedRecord::reason).isEqualTo(RefusedRecord.Reason.STALE);
    }

    @Test
    void decode_encodedFence_restoresEveryLock() {
        PartitionFence fence = new PartitionFence(LOCKS);
        fence.judge(record(seq("orders", 41)));
        fence.judge(record(seq("billing", 7)));

        PartitionFence restored = PartitionFence.decode("t-0", fence.encode(), LOCKS);

        assertThat(restored.accepted("orders")).isEqualTo(41);
        assertThat(restored.accepted("billing")).isEqualTo(7);
        assertThat(restored.judge(record(seq("orders", 40))).reason()).isEqualTo(RefusedRecord.Reason.STALE);
        assertThat(PartitionFence.decode("t-0", "", LOCKS).accepted("orders")).isZero();
    }

    @Test
    void decode_metadataThatIsNotAFence_isRefusedNamingThePartition() {
        assertThatThrownBy(() -> PartitionFence.decode("t-0", "someone else's", LOCKS))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("t-0").hasMessageContaining("not a fence");
        assertThatThrownBy(() -> PartitionFence.decode("t-0", "fencer1;b3JkZXJz=x;", LOCKS))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("b3JkZXJz=x");
        assertThatThrownBy(() -> PartitionFence.decode("t-0", "fencer1;b3JkZXJz=0;", LOCKS))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("out of range");
    }

    @Test
    void create_consumerSettingsThatBreakTheFence_areRefusedNamingThem() {
        Map<String, Object> config = new HashMap<>(Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:1",
                ConsumerConfig.GROUP_ID_CONFIG, "g"));
        config.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_uncommitted");
        assertThatThrownBy(() -> FencedConsumer.create(config, new StringDeserializer(), new StringDeserializer(),
                LOCKS)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("read_committed");
        config.remove(ConsumerConfig.ISOLATION_LEVEL_CONFIG);
        config.remove(ConsumerConfig.GROUP_ID_CONFIG);
        assertThatThrownBy(() -> FencedConsumer.create(config, new StringDeserializer(), new StringDeserializer(),
                LOCKS)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("group.id");
        Set<String> tooMany = IntStream.range(0, 33).mapToObj(i -> "l" + i).collect(Collectors.toSet());
        assertThatThrownBy(() -> FencedConsumer.create(Map.of(), new StringDeserializer(), new StringDeserializer(),
                tooMany)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("1 to 32 locks, got 33");
        Set<String> longNames = IntStream.range(0, 20).mapToObj(i -> "x".repeat(200) + i).collect(Collectors.toSet());
        assertThatThrownBy(() -> FencedConsumer.create(Map.of(), new StringDeserializer(), new StringDeserializer(),
                longNames)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("more than 4096");
    }

    @Test
    void create_producerWithItsOwnTransactionalId_isRefused() {
        assertThatThrownBy(() -> FencedProducer.create("orders", Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "mine"),
                new StringSerializer(), new StringSerializer())).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("fencer.orders");
    }

    @Test
    void onGrant_tokenOfAnotherLockOrShared_isRefusedBeforeAnyConnection() {
        try (FencedProducer<String, String> producer = FencedProducer.create("orders",
                Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:1"), new StringSerializer(),
                new StringSerializer())) {
            assertThatThrownBy(() -> producer.onGrant(new FencingToken("invoices", 3)))
                    .isInstanceOf(ScopeMismatchException.class);
            assertThatThrownBy(() -> producer.onGrant(new FencingToken("orders", 3, io.fencer.core.LockMode.SHARED)))
                    .isInstanceOf(io.fencer.core.ModeMismatchException.class);
            assertThat(producer.token()).isNull();
        }
    }
}
