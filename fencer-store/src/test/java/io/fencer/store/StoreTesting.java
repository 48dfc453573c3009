package io.fencer.store;

import io.fencer.core.FencingToken;
import java.nio.charset.StandardCharsets;
import java.util.List;

/** Small helpers shared by the store tests. */
final class StoreTesting {
    private StoreTesting() {}

    static String sequencer(String lock, long value) {
        return new FencingToken(lock, value).sequencer();
    }

    static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    static String text(byte[] bytes) {
        return bytes == null ? null : new String(bytes, StandardCharsets.UTF_8);
    }

    static List<Op> put(String key, String value) {
        return List.of(Op.put(bytes(key), bytes(value)));
    }
}
