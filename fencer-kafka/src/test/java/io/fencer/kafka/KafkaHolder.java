package io.fencer.kafka;

import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.Session;
import io.fencer.core.FencingToken;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Holder A of the paused-holder scenario, in a JVM of its own: acquires lock {@code args[2]} with a short lease,
 * sends {@code A1} to topic {@code args[3]} and prints {@code GRANTED <sequencer>}, then obeys its standard input:
 * {@code check} (asks the lock service whether its token is current), {@code send} (sends {@code A2}), {@code exit}.
 * Mode {@code fenced} sends through {@link FencedProducer}; mode {@code plain} (the check-then-act control) through
 * a plain producer that stamps the same header, with no transactional id.
 */
public final class KafkaHolder {
    private KafkaHolder() {}

    public static void main(String[] args) throws Exception {
        String lock = args[2];
        String topic = args[3];
        boolean fenced = args[4].equals("fenced");
        FencerClient fencer = Fencer.connect(args[0]);
        Session session = fencer.openSession(Duration.ofSeconds(4));
        Grant grant = session.lock(lock).acquire(Duration.ofSeconds(60));
        FencingToken token = grant.token();
        Map<String, Object> config = KafkaFencingProcessTest.producerConfig(args[1]);
        FencedProducer<String, String> producer = fenced
                ? FencedProducer.create(lock, config, new StringSerializer(), new StringSerializer()) : null;
        KafkaProducer<String, String> plain = fenced ? null
                : new KafkaProducer<>(config, new StringSerializer(), new StringSerializer());
        if (fenced) {
            producer.onGrant(token);
        }
        send(producer, plain, token, topic, "A1");
        System.out.println("GRANTED " + token.sequencer());
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        for (String line = in.readLine(); line != null && !line.equals("exit"); line = in.readLine()) {
            switch (line) {
                case "check" -> System.out.println("CHECKED " + fencer.validate(token).status());
                case "send" -> {
                    try {
                        send(producer, plain, token, topic, "A2");
                        System.out.println("SENT");
                    } catch (ProducerFencedException e) {
                        System.out.println("FENCED " + e.getMessage());
                    }
                }
                default -> System.out.println("UNKNOWN " + line);
            }
        }
        System.exit(0);
    }

    private static void send(FencedProducer<String, String> producer, KafkaProducer<String, String> plain,
            FencingToken token, String topic, String value) throws Exception {
        if (producer != null) {
            producer.send(new ProducerRecord<>(topic, "order-1", value));
        } else {
            ProducerRecord<String, String> record = new ProducerRecord<>(topic, "order-1", value);
            record.headers().add(FencedProducer.SEQUENCER_HEADER,
                    token.sequencer().getBytes(StandardCharsets.UTF_8));
            plain.send(record).get();
        }
    }
}
