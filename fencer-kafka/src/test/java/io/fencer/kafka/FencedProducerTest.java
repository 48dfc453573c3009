package io.fencer.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.core.FencingToken;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The fenced producer on a real broker (KRaft, in this JVM), its clients connected through a {@link KafkaReplyHold}
 * that can withhold the answer to a commit the broker received and applied. One broker for the class.
 */
class FencedProducerTest {
    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final int COMMIT_BLOCK_MILLIS = 2_000;

    @TempDir
    static Path dir;
    private static KafkaTestBroker broker;

    @BeforeAll
    static void start() {
        broker = KafkaTestBroker.start(dir.resolve("kafka"), true);
        // The first transactional producer makes the broker create its transaction state topic, which may take
        // longer than the short max.block.ms of the test of a withheld answer.
        broker.createTopic("warm-up");
        try (FencedProducer<String, String> warmUp = producer("warm-up", KafkaFencingProcessTest.producerConfig(
                broker.bootstrap()))) {
            warmUp.onGrant(new FencingToken("warm-up", 1));
            warmUp.send(new ProducerRecord<>("warm-up", "k", "v"));
        }
    }

    @AfterAll
    static void stop() {
        if (broker != null) {
            broker.close();
        }
    }

    private static FencedProducer<String, String> producer(String lock, Map<String, Object> config) {
        return FencedProducer.create(lock, config, new StringSerializer(), new StringSerializer());
    }

    /**
     * The control: through the hold, not armed, a send commits, and its commit (EndTxn) passed the hold, so the hold
     * is on the path of the commit the next test withholds the answer to.
     */
    @Test
    void send_commitAnsweredThroughTheProxy_commitsAndTheRecordIsRead() {
        broker.createTopic("invoices");
        int seen = broker.hold().endTxnRequestsSeen.get();
        try (FencedProducer<String, String> producer = producer("invoices",
                KafkaFencingProcessTest.producerConfig(broker.proxiedBootstrap()))) {
            producer.onGrant(new FencingToken("invoices", 3));
            producer.send(new ProducerRecord<>("invoices", "invoice-1", "issued"));
        }

        assertThat(broker.hold().endTxnRequestsSeen.get()).as("the commit went through the hold").isGreaterThan(seen);
        assertThat(committedValues("invoices", 1)).containsExactly("issued");
    }

    /**
     * A commit that got no answer within max.block.ms was followed by an abort, which the Kafka producer refuses while
     * a commit is pending: send threw that refusal instead of saying the records may still be committed. The hold
     * withholds exactly the commit's answer while the broker applies it (the first send made the producer know the
     * topic's leader, so the second waits for nothing before its commit); the next grant's producer, whose
     * initTransactions settles the transaction, then shows that the broker had in fact committed it.
     */
    @Test
    void send_commitsAnswerWithheld_failsSayingTheRecordsMayOrMayNotHaveBeenCommittedAndTheyWere() {
        broker.createTopic("orders");
        KafkaReplyHold hold = broker.hold();
        Map<String, Object> config = new HashMap<>(KafkaFencingProcessTest.producerConfig(broker.proxiedBootstrap()));
        config.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, COMMIT_BLOCK_MILLIS);
        try (FencedProducer<String, String> producer = producer("orders", config)) {
            producer.onGrant(new FencingToken("orders", 5));
            producer.send(new ProducerRecord<>("orders", "order-1", "paid"));
            try {
                hold.arm();
                assertThatThrownBy(() -> producer.send(new ProducerRecord<>("orders", "order-1", "shipped")))
                        .isInstanceOf(KafkaException.class)
                        .hasMessageContaining("got no answer within max.block.ms")
                        .hasMessageContaining("may or may not have been committed")
                        .hasMessageContaining("fencer.orders")
                        .hasCauseInstanceOf(TimeoutException.class);
                assertThat(hold.repliesHeld.get()).as("the commit's answer was withheld").isGreaterThanOrEqualTo(1);
                assertThatThrownBy(() -> producer.send(new ProducerRecord<>("orders", "order-1", "delivered")))
                        .as("closed: sending again takes up a grant again, which settles the transaction first")
                        .isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
            } finally {
                hold.release(); // the next grant's producer goes through the hold too
            }

            producer.onGrant(new FencingToken("orders", 6));
            producer.send(new ProducerRecord<>("orders", "order-1", "delivered"));
        }

        assertThat(committedValues("orders", 3)).as("the commit whose answer was withheld was applied")
                .containsExactly("paid", "shipped", "delivered");
    }

    /** Reads {@code topic}'s committed records from the start until {@code count} were read or a minute passed. */
    private static List<String> committedValues(String topic, int count) {
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap(),
                ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed",
                ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest"),
                new StringDeserializer(), new StringDeserializer())) {
            consumer.assign(List.of(new TopicPartition(topic, 0)));
            List<String> values = new ArrayList<>();
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (values.size() < count && System.nanoTime() < deadline) {
                consumer.poll(Duration.ofMillis(200)).forEach(r -> values.add(r.value()));
            }
            return values;
        }
    }
}
