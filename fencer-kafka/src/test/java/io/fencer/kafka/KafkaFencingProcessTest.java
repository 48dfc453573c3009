package io.fencer.kafka;

import io.fencer.testing.HolderProcess;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.Session;
import io.fencer.core.FencingToken;
import io.fencer.core.ScopeMismatchException;
import io.fencer.testing.FencerTestServer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Fencing through Kafka on a real broker (KRaft, in this JVM) and a real Fencer server, with holder A in a JVM of
 * its own, frozen (SIGSTOP) past its lease while B is granted the lock and sends: the broker refuses A's fenced
 * producer once B's started, the check-then-act control (a plain producer that checked its token before the pause)
 * gets its stale record into the log after B's, and the fenced consumer refuses that record and keeps its fence across
 * a restart. One broker and one server for the class.
 */
class KafkaFencingProcessTest {
    private static final Duration WAIT = Duration.ofSeconds(60);

    @TempDir
    static Path dir;
    private static KafkaTestBroker broker;
    private static FencerTestServer server;
    private static FencerClient fencer;

    @BeforeAll
    static void start() {
        broker = KafkaTestBroker.start(dir.resolve("kafka"));
        server = FencerTestServer.start(dir.resolve("fencer"));
        fencer = Fencer.connect(server.endpoint());
    }

    @AfterAll
    static void stop() {
        if (fencer != null) {
            fencer.close();
        }
        if (server != null) {
            server.close();
        }
        if (broker != null) {
            broker.close();
        }
    }

    static Map<String, Object> producerConfig(String bootstrap) {
        return Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                ProducerConfig.MAX_BLOCK_MS_CONFIG, 30_000,
                ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000,
                ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 20_000,
                ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, 20_000,
                ProducerConfig.LINGER_MS_CONFIG, 0);
    }

    private static Map<String, Object> consumerConfig(String group) {
        return Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap(),
                ConsumerConfig.GROUP_ID_CONFIG, group,
                ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest",
                ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 10_000,
                ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 1_000);
    }

    private static FencedConsumer<String, String> consumer(String group, String topic, String... locks) {
        FencedConsumer<String, String> consumer = FencedConsumer.create(consumerConfig(group),
                new StringDeserializer(), new StringDeserializer(), Set.of(locks));
        consumer.subscribe(List.of(topic));
        return consumer;
    }

    /** Polls until {@code count} records were judged (accepted or refused), or fails after a minute. */
    private static FencedRecords<String, String> pollJudged(FencedConsumer<String, String> consumer, int count) {
        List<ConsumerRecord<String, String>> accepted = new ArrayList<>();
        List<RefusedRecord> refused = new ArrayList<>();
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (accepted.size() + refused.size() < count) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("judged " + accepted.size() + " + " + refused.size() + " of " + count);
            }
            FencedRecords<String, String> polled = consumer.poll(Duration.ofMillis(200));
            accepted.addAll(polled.accepted());
            refused.addAll(polled.refused());
        }
        return new FencedRecords<>(accepted, refused);
    }

    private static List<String> values(FencedRecords<String, String> records) {
        return records.accepted().stream().map(ConsumerRecord::value).toList();
    }

    private static String newTopic() {
        String topic = "t-" + UUID.randomUUID();
        broker.createTopic(topic);
        return topic;
    }

    /** Holder B: waits for the lock (granted once A's lease expired) and sends {@code B1} through a fenced producer. */
    private static FencingToken sendAsB(String lock, String topic) {
        try (Session session = fencer.openSession(Duration.ofSeconds(10));
                Grant grant = session.lock(lock).acquire(WAIT);
                FencedProducer<String, String> producer = FencedProducer.create(lock,
                        producerConfig(broker.bootstrap()), new StringSerializer(), new StringSerializer())) {
            producer.onGrant(grant.token());
            producer.send(new ProducerRecord<>(topic, "order-1", "B1"));
            return grant.token();
        }
    }

    @Test
    void send_pausedHolderResumedAfterNewerGrantSent_isFencedByTheBrokerAndNeverRead() throws Exception {
        String topic = newTopic();
        try (HolderProcess a = HolderProcess.start(dir, "a-fenced", KafkaHolder.class, server.endpoint(),
                broker.bootstrap(), "orders", topic, "fenced")) {
            FencingToken tokenA = FencingToken.parse(a.awaitLine("GRANTED ", WAIT).substring(8));
            a.pause();
            FencingToken tokenB = sendAsB("orders", topic);
            assertThat(tokenB.value()).isGreaterThan(tokenA.value());

            a.resume();
            a.send("send");
            String answer = a.awaitLine("", WAIT);

            assertThat(answer).startsWith("FENCED the producer of " + tokenA).contains("superseded");
            a.send("exit");
        }
        try (FencedConsumer<String, String> consumer = consumer("g-" + UUID.randomUUID(), topic, "orders")) {
            FencedRecords<String, String> read = pollJudged(consumer, 2);
            assertThat(values(read)).containsExactly("A1", "B1");
            assertThat(consumer.poll(Duration.ofSeconds(2)).isEmpty()).as("A2 was never committed").isTrue();
        }
    }

    @Test
    void checkThenAct_plainProducerPausedPastItsLease_landsAfterTheNewerRecordAndOnlyTheFenceRefusesIt()
            throws Exception {
        String topic = newTopic();
        FencingToken tokenA;
        FencingToken tokenB;
        try (HolderProcess a = HolderProcess.start(dir, "a-plain", KafkaHolder.class, server.endpoint(),
                broker.bootstrap(), "payments", topic, "plain")) {
            tokenA = FencingToken.parse(a.awaitLine("GRANTED ", WAIT).substring(8));
            a.send("check");
            assertThat(a.awaitLine("CHECKED ", WAIT)).isEqualTo("CHECKED CURRENT");
            a.pause();
            tokenB = sendAsB("payments", topic);

            a.resume();
            a.send("send");
            assertThat(a.awaitLine("", WAIT)).isEqualTo("SENT");
            a.send("exit");
        }
        // The fault is real: a plain consumer's last value for the key is the superseded holder's.
        assertThat(plainValues(topic, 3)).containsExactly("A1", "B1", "A2");

        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (FencedConsumer<String, String> consumer = FencedConsumer.create(consumerConfig("g-" + UUID.randomUUID()),
                new StringDeserializer(), new StringDeserializer(), Set.of("payments"), registry)) {
            consumer.subscribe(List.of(topic));
            FencedRecords<String, String> read = pollJudged(consumer, 3);

            assertThat(values(read)).containsExactly("A1", "B1");
            assertThat(read.refused()).singleElement().satisfies(refused -> {
                assertThat(refused.reason()).isEqualTo(RefusedRecord.Reason.STALE);
                assertThat(refused.presented()).isEqualTo(tokenA);
                assertThat(refused.accepted()).isEqualTo(tokenB);
                assertThat(refused.offset()).as("A1, B1, the commit marker of B's transaction, A2").isEqualTo(3);
                assertThat(refused.diagnose()).contains("carries " + tokenA).contains("accepted " + tokenB)
                        .contains("superseded");
            });
            assertThat(consumer.refusedCount()).isEqualTo(1);
            assertThat(registry.get("fencer.adapter.refusals").tags("adapter", "kafka", "scope", topic, "reason",
                    "stale_token").counter().count()).as("the one stale record, counted").isEqualTo(1);
        }
    }

    private static List<String> plainValues(String topic, int count) {
        try (KafkaConsumer<String, String> plain = new KafkaConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap(),
                ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed"),
                new StringDeserializer(), new StringDeserializer())) {
            TopicPartition partition = new TopicPartition(topic, 0);
            plain.assign(List.of(partition));
            plain.seekToBeginning(List.of(partition));
            List<String> values = new ArrayList<>();
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (values.size() < count && System.nanoTime() < deadline) {
                plain.poll(Duration.ofMillis(200)).forEach(r -> values.add(r.value()));
            }
            return values;
        }
    }

    @Test
    void poll_afterCommitAndRestart_refusesAStaleRecordTheNewConsumerNeverSawBeaten() {
        String topic = newTopic();
        String group = "g-" + UUID.randomUUID();
        send(topic, new FencingToken("ledger", 7).sequencer(), "v7");
        try (FencedConsumer<String, String> first = consumer(group, topic, "ledger")) {
            assertThat(values(pollJudged(first, 1))).containsExactly("v7");
            assertThat(first.accepted(new TopicPartition(topic, 0), "ledger")).isEqualTo(7);
            first.commit();
        }
        send(topic, new FencingToken("ledger", 6).sequencer(), "v6");
        send(topic, new FencingToken("ledger", 8).sequencer(), "v8");

        try (FencedConsumer<String, String> second = consumer(group, topic, "ledger")) {
            FencedRecords<String, String> read = pollJudged(second, 2);

            assertThat(values(read)).containsExactly("v8");
            assertThat(read.refused()).singleElement().satisfies(refused -> {
                assertThat(refused.presented().value()).isEqualTo(6);
                assertThat(refused.accepted().value()).isEqualTo(7);
            });
        }
        // The control: a consumer of another group, without the committed fence, starts from nothing and admits v6
        // only because it reads v7 first; reading from v6 on, it would take v6. The committed fence is what refused.
        try (FencedConsumer<String, String> fresh = consumer("g-" + UUID.randomUUID(), topic, "ledger")) {
            assertThat(values(pollJudged(fresh, 3))).containsExactly("v7", "v8");
        }
    }

    /**
     * A fence that could not be restored when its partition was assigned (the rebalance listener threw, and Kafka
     * keeps the assignment) was replaced by an empty one at the next poll, which admitted a record the committed
     * fence refuses: the consumer must keep refusing to judge, and skip nothing.
     */
    @Test
    void poll_whenCommittedFenceCannotBeRestored_failsEveryPollAndHandsOverNothing() {
        String topic = newTopic();
        String group = "g-" + UUID.randomUUID();
        send(topic, new FencingToken("ledger", 7).sequencer(), "v7");
        send(topic, new FencingToken("ledger", 6).sequencer(), "v6");
        commitWithoutFence(group, new TopicPartition(topic, 0), 1);

        List<String> accepted = new ArrayList<>();
        List<RuntimeException> failures = new ArrayList<>();
        long deadline = System.nanoTime() + WAIT.toNanos();
        try (FencedConsumer<String, String> consumer = consumer(group, topic, "ledger")) {
            while (accepted.isEmpty() && failures.size() < 3 && System.nanoTime() < deadline) {
                try {
                    accepted.addAll(values(consumer.poll(Duration.ofMillis(200))));
                } catch (RuntimeException e) {
                    failures.add(e);
                }
            }
        }

        assertThat(accepted).as("judged against no fence at all").isEmpty();
        assertThat(failures).hasSize(3).allSatisfy(e -> assertThat(e).hasStackTraceContaining("is not a fence"));
        try (FencedConsumer<String, String> other = consumer("g-" + UUID.randomUUID(), topic, "ledger")) {
            assertThat(values(pollJudged(other, 2))).as("v6 is still in the log").containsExactly("v7");
        }
    }

    /** Commits {@code offset} for {@code group} as a consumer outside the fence does: without a fence. */
    private static void commitWithoutFence(String group, TopicPartition partition, long offset) {
        Map<String, Object> config = new HashMap<>(consumerConfig(group));
        config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        try (KafkaConsumer<String, String> plain = new KafkaConsumer<>(config, new StringDeserializer(),
                new StringDeserializer())) {
            plain.commitSync(Map.of(partition, new OffsetAndMetadata(offset, "not a fence")));
        }
    }

    @Test
    void poll_badRecords_refusesEachWithItsReasonAndHandsOverOnlyTheGoodOne() {
        String topic = newTopic();
        send(topic, null, "unstamped");
        send(topic, "fencer1.not-a-sequencer", "malformed");
        send(topic, new FencingToken("invoices", 9).sequencer(), "other-lock");
        send(topic, new FencingToken("orders", 3, io.fencer.core.LockMode.SHARED).sequencer(), "shared");
        send(topic, new FencingToken("orders", 2).sequencer(), "good");

        try (FencedConsumer<String, String> consumer = consumer("g-" + UUID.randomUUID(), topic, "orders")) {
            FencedRecords<String, String> read = pollJudged(consumer, 5);

            assertThat(values(read)).containsExactly("good");
            assertThat(read.refused()).extracting(RefusedRecord::reason).containsExactly(
                    RefusedRecord.Reason.UNSTAMPED, RefusedRecord.Reason.MALFORMED, RefusedRecord.Reason.OTHER_LOCK,
                    RefusedRecord.Reason.SHARED_MODE);
            assertThat(read.refused().get(1).diagnose()).contains("malformed sequencer 'fencer1.not-a-sequencer'");
            assertThat(read.refused().get(2).diagnose()).contains("invoices#9").contains("does not fence");
            assertThat(consumer.accepted(new TopicPartition(topic, 0), "orders")).isEqualTo(2);
        }
    }

    @Test
    void onGrant_tokenOfAnotherLock_isRefusedAndNothingIsSent() {
        String topic = newTopic();
        try (FencedProducer<String, String> producer = FencedProducer.create("orders",
                producerConfig(broker.bootstrap()), new StringSerializer(), new StringSerializer())) {
            assertThatThrownBy(() -> producer.onGrant(new FencingToken("invoices", 4)))
                    .isInstanceOf(ScopeMismatchException.class).hasMessageContaining("invoices#4");
            assertThatThrownBy(() -> producer.send(new ProducerRecord<>(topic, "k", "v")))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("no grant");
        }
        assertThat(endOffset(topic)).as("nothing reached the topic").isZero();
    }

    private static long endOffset(String topic) {
        try (KafkaConsumer<String, String> plain = new KafkaConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap()),
                new StringDeserializer(), new StringDeserializer())) {
            TopicPartition partition = new TopicPartition(topic, 0);
            return plain.endOffsets(List.of(partition), WAIT).get(partition);
        }
    }

    private static void send(String topic, String sequencer, String value) {
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(producerConfig(broker.bootstrap()),
                new StringSerializer(), new StringSerializer())) {
            ProducerRecord<String, String> record = new ProducerRecord<>(topic, "k", value);
            if (sequencer != null) {
                record.headers().add(FencedProducer.SEQUENCER_HEADER, sequencer.getBytes(StandardCharsets.UTF_8));
            }
            producer.send(record).get();
        } catch (Exception e) {
            throw new AssertionError("could not send " + value, e);
        }
    }
}
