package io.fencer.kafka;

import io.fencer.core.FencingToken;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LockMode;
import io.fencer.core.Sequencer;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;

/**
 * The fence of one partition: the highest token accepted per lock, which judges each record in log order and is
 * committed with the partition's offset as the offset's metadata, {@code fencer1;<base64url lock>=<token>;...}.
 */
final class PartitionFence {
    static final String METADATA_PREFIX = "fencer1;";

    private final Set<String> locks;
    private final Map<String, Long> accepted = new TreeMap<>();
    /**
     * The committed fences of locks this consumer does not fence, committed again as they were read: dropped, they
     * would be lost for good, and a consumer of the group that fences the lock again (a rollback, or an older
     * version during a rolling deploy) would start it at none and admit the stale records it refused before.
     */
    private final Map<String, Long> kept = new TreeMap<>();

    PartitionFence(Set<String> locks) {
        this.locks = locks;
    }

    long accepted(String lock) {
        return accepted.getOrDefault(lock, FencingToken.NONE);
    }

    /** Judges {@code record}: null when admitted (the fence advanced), else why it was refused. */
    RefusedRecord judge(ConsumerRecord<?, ?> record) {
        int stamps = 0;
        String text = null;
        for (Header header : record.headers().headers(FencedProducer.SEQUENCER_HEADER)) {
            stamps++;
            text = header.value() == null ? "" : new String(header.value(), StandardCharsets.UTF_8);
        }
        if (stamps == 0) {
            return refuse(record, RefusedRecord.Reason.UNSTAMPED, null, null, "no sequencer header");
        }
        if (stamps > 1) {
            return refuse(record, RefusedRecord.Reason.MALFORMED, null, null, stamps + " sequencer headers, not one");
        }
        FencingToken token;
        try {
            token = Sequencer.parse(text);
        } catch (InvalidArgumentException e) {
            return refuse(record, RefusedRecord.Reason.MALFORMED, null, null, e.getMessage());
        }
        if (!locks.contains(token.lock())) {
            return refuse(record, RefusedRecord.Reason.OTHER_LOCK, token, null, "it fences " + locks);
        }
        if (token.mode() != LockMode.EXCLUSIVE) {
            return refuse(record, RefusedRecord.Reason.SHARED_MODE, token, null, "shared grant");
        }
        long current = accepted(token.lock());
        if (token.value() < current) {
            return refuse(record, RefusedRecord.Reason.STALE, token, new FencingToken(token.lock(), current),
                    "stale token " + token + ", accepted " + token.lock() + "#" + current);
        }
        accepted.put(token.lock(), token.value());
        return null;
    }

    private static RefusedRecord refuse(ConsumerRecord<?, ?> record, RefusedRecord.Reason reason,
            FencingToken presented, FencingToken accepted, String detail) {
        return new RefusedRecord(record.topic(), record.partition(), record.offset(), reason, presented, accepted,
                detail);
    }

    String encode() {
        StringBuilder text = new StringBuilder(METADATA_PREFIX);
        Map<String, Long> all = new TreeMap<>(kept);
        all.putAll(accepted);
        all.forEach((lock, value) -> text.append(b64(lock)).append('=').append(value).append(';'));
        return text.toString();
    }

    /** The longest metadata a fence of {@code locks} can encode to: every lock at the highest token value. */
    static int encodedCharsMax(Set<String> locks) {
        int chars = METADATA_PREFIX.length();
        for (String lock : locks) {
            chars += b64(lock).length() + 1 + Long.toString(FencingToken.VALUE_MAX).length() + 1;
        }
        return chars;
    }

    /**
     * Restores a fence from committed metadata; empty or null metadata (nothing committed yet) is a fence that has
     * accepted nothing. The fences of locks this consumer does not fence (a consumer fencing fewer locks than another
     * of its group, or than before) judge nothing here and are kept, to be committed again.
     *
     * @throws IllegalStateException when the metadata is not a fence's, naming {@code where}
     */
    static PartitionFence decode(String where, String metadata, Set<String> locks) {
        PartitionFence fence = new PartitionFence(locks);
        if (metadata == null || metadata.isEmpty()) {
            return fence;
        }
        if (!metadata.startsWith(METADATA_PREFIX)) {
            throw notAFence(where, metadata, "it does not start with '" + METADATA_PREFIX + "'");
        }
        for (String entry : metadata.substring(METADATA_PREFIX.length()).split(";")) {
            if (entry.isEmpty()) {
                continue;
            }
            int equals = entry.indexOf('=');
            try {
                String lock = new String(Base64.getUrlDecoder().decode(entry.substring(0, equals)),
                        StandardCharsets.UTF_8);
                long value = Long.parseLong(entry.substring(equals + 1));
                if (value < 1 || value > FencingToken.VALUE_MAX) {
                    throw notAFence(where, metadata, "token value " + value + " out of range");
                }
                (locks.contains(lock) ? fence.accepted : fence.kept).put(lock, value);
            } catch (IllegalArgumentException | StringIndexOutOfBoundsException e) {
                throw notAFence(where, metadata, "entry '" + entry + "' is not <base64url lock>=<token>");
            }
        }
        return fence;
    }

    private static IllegalStateException notAFence(String where, String metadata, String why) {
        return new IllegalStateException("the committed offset metadata of " + where + " is not a fence ('"
                + InvalidArgumentException.printable(metadata) + "'): " + why + "; another consumer of the group"
                + " commits offsets without it, and this consumer will not guess the accepted tokens");
    }

    private static String b64(String lock) {
        return Base64.getUrlEncoder().withoutPadding().encodeToString(lock.getBytes(StandardCharsets.UTF_8));
    }
}
