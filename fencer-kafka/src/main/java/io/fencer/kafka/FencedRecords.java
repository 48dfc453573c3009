package io.fencer.kafka;

import java.util.List;
import org.apache.kafka.clients.consumer.ConsumerRecord;

/**
 * What one {@link FencedConsumer#poll} read: the records handed to the application, in each partition's order, and
 * the records refused, with why.
 *
 * @param accepted the records whose token the fence admitted
 * @param refused the records it refused
 */
public record FencedRecords<K, V>(List<ConsumerRecord<K, V>> accepted, List<RefusedRecord> refused) {
    public FencedRecords {
        accepted = List.copyOf(accepted);
        refused = List.copyOf(refused);
    }

    public boolean isEmpty() {
        return accepted.isEmpty() && refused.isEmpty();
    }
}
