package io.fencer.kafka;

import io.fencer.testing.FreePorts;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;
import kafka.tools.StorageTool;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.utils.Time;

/**
 * A real Kafka broker in KRaft mode (one node, broker and controller in one), in the test's JVM, on free ports of
 * 127.0.0.1 under a directory of the test's. Sized for speed: one partition per topic, one replica, small segments,
 * no initial rebalance delay, one partition for the offsets and transaction state topics.
 */
final class KafkaTestBroker implements AutoCloseable {
    private static final long TOPIC_TIMEOUT_SECONDS = 60;

    private final KafkaRaftServer server;
    private final String bootstrap;
    private final KafkaReplyHold hold;

    private KafkaTestBroker(KafkaRaftServer server, String bootstrap, KafkaReplyHold hold) {
        this.server = server;
        this.bootstrap = bootstrap;
        this.hold = hold;
    }

    /** Formats a log directory under {@code dir} and starts the broker on it; returns once it serves. */
    static KafkaTestBroker start(Path dir) {
        return start(dir, false);
    }

    /**
     * As {@link #start(Path)}; when {@code proxied}, the broker also listens on a second listener, PROXIED, advertised
     * at the address of a {@link KafkaReplyHold} in front of it ({@link #proxiedBootstrap()}). A client bootstrapped
     * there is told the PROXIED addresses, the listener it connected on, so all of its connections pass the hold,
     * while the broker's own traffic and the other clients stay on PLAINTEXT.
     */
    static KafkaTestBroker start(Path dir, boolean proxied) {
        int[] ports = FreePorts.choose(proxied ? 3 : 2);
        KafkaReplyHold hold = proxied ? KafkaReplyHold.start(ports[2]) : null;
        String listeners = "PLAINTEXT://127.0.0.1:" + ports[0] + ",CONTROLLER://127.0.0.1:" + ports[1];
        String advertised = "PLAINTEXT://127.0.0.1:" + ports[0];
        String protocols = "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT";
        if (proxied) {
            listeners += ",PROXIED://127.0.0.1:" + ports[2];
            advertised += ",PROXIED://127.0.0.1:" + hold.port();
            protocols += ",PROXIED:PLAINTEXT";
        }
        Path logDir = dir.resolve("kafka-logs");
        Properties props = new Properties();
        props.putAll(Map.ofEntries(
                Map.entry("process.roles", "broker,controller"),
                Map.entry("node.id", "1"),
                Map.entry("controller.quorum.voters", "1@127.0.0.1:" + ports[1]),
                Map.entry("listeners", listeners),
                Map.entry("advertised.listeners", advertised),
                Map.entry("controller.listener.names", "CONTROLLER"),
                Map.entry("inter.broker.listener.name", "PLAINTEXT"),
                Map.entry("listener.security.protocol.map", protocols),
                Map.entry("log.dirs", logDir.toString()),
                Map.entry("num.partitions", "1"),
                Map.entry("auto.create.topics.enable", "false"),
                Map.entry("log.segment.bytes", Integer.toString(1024 * 1024)),
                Map.entry("offsets.topic.replication.factor", "1"),
                Map.entry("offsets.topic.num.partitions", "1"),
                Map.entry("transaction.state.log.replication.factor", "1"),
                Map.entry("transaction.state.log.min.isr", "1"),
                Map.entry("transaction.state.log.num.partitions", "1"),
                Map.entry("group.initial.rebalance.delay.ms", "0"),
                Map.entry("share.coordinator.state.topic.replication.factor", "1"),
                Map.entry("share.coordinator.state.topic.min.isr", "1")));
        try {
            format(dir, props);
            KafkaRaftServer server = new KafkaRaftServer(KafkaConfig.fromProps(props, false), Time.SYSTEM);
            server.startup();
            KafkaTestBroker broker = new KafkaTestBroker(server, "127.0.0.1:" + ports[0], hold);
            broker.createTopic("fencer-broker-ready"); // answers only once the broker has registered and serves
            return broker;
        } catch (RuntimeException e) {
            if (hold != null) {
                hold.close();
            }
            throw e;
        }
    }

    private static void format(Path dir, Properties props) {
        try {
            Path file = Files.createDirectories(dir).resolve("server.properties");
            try (OutputStream out = Files.newOutputStream(file)) {
                props.store(out, "fencer-kafka test broker");
            }
            ByteArrayOutputStream output = new ByteArrayOutputStream();
            int status = StorageTool.execute(new String[] {"format", "-t", Uuid.randomUuid().toString(), "-c",
                    file.toString()}, new PrintStream(output, true, StandardCharsets.UTF_8));
            if (status != 0) {
                throw new IllegalStateException("kafka-storage format exited " + status + ": "
                        + output.toString(StandardCharsets.UTF_8));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    String bootstrap() {
        return bootstrap;
    }

    /** The address of the hold in front of the PROXIED listener; only on a broker started proxied. */
    String proxiedBootstrap() {
        return "127.0.0.1:" + hold().port();
    }

    /** The hold in front of the PROXIED listener; only on a broker started proxied. */
    KafkaReplyHold hold() {
        if (hold == null) {
            throw new IllegalStateException("the broker was started without its PROXIED listener");
        }
        return hold;
    }

    /** Creates {@code topic} with one partition and one replica; waits until the broker confirms it. */
    void createTopic(String topic) {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all()
                    .get(TOPIC_TIMEOUT_SECONDS, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted creating topic " + topic, e);
        } catch (ExecutionException | java.util.concurrent.TimeoutException e) {
            throw new IllegalStateException("could not create topic " + topic + " on " + bootstrap, e);
        }
    }

    @Override
    public void close() {
        try {
            server.shutdown();
            server.awaitShutdown();
        } finally {
            if (hold != null) {
                hold.close();
            }
        }
    }
}
