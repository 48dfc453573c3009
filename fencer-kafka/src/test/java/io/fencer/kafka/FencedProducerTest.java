package io.fencer.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.core.FencingToken;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The fenced producer's failures on a real broker (KRaft, in this JVM); one broker for the class, which the test of a
 * commit without an answer stops.
 */
class FencedProducerTest {
    private static final int COMMIT_BLOCK_MILLIS = 2_000;

    @TempDir
    static Path dir;
    private static KafkaTestBroker broker;

    @BeforeAll
    static void start() {
        broker = KafkaTestBroker.start(dir.resolve("kafka"));
        // The first transactional producer makes the broker create its transaction state topic, which may take
        // longer than the short max.block.ms of the test below.
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
     * A commit cut short by max.block.ms was followed by an abort, which the Kafka producer refuses while a commit is
     * pending: send threw that refusal (an IllegalStateException) instead of saying the records may still be
     * committed. The broker stops between a send that committed and the next one, so the next commit gets no answer
     * within the test's short max.block.ms (the first send made the producer know the topic's leader: the second
     * send waits for nothing before its commit).
     */
    @Test
    void send_commitGetsNoAnswerInTime_failsSayingTheRecordsMayOrMayNotHaveBeenCommitted() {
        broker.createTopic("orders");
        Map<String, Object> config = new HashMap<>(KafkaFencingProcessTest.producerConfig(broker.bootstrap()));
        config.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, COMMIT_BLOCK_MILLIS);
        try (FencedProducer<String, String> producer = producer("orders", config)) {
            producer.onGrant(new FencingToken("orders", 5));
            producer.send(new ProducerRecord<>("orders", "order-1", "paid"));
            broker.close();
            broker = null;

            assertThatThrownBy(() -> producer.send(new ProducerRecord<>("orders", "order-1", "shipped")))
                    .isInstanceOf(KafkaException.class)
                    .hasMessageContaining("may or may not have been committed")
                    .hasMessageContaining("fencer.orders");
            assertThatThrownBy(() -> producer.send(new ProducerRecord<>("orders", "order-1", "delivered")))
                    .as("closed: sending again takes up the grant again, which settles the transaction first")
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
        }
    }
}
