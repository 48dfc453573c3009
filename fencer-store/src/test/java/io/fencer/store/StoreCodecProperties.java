package io.fencer.store;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.core.FencePolicy;
import io.fencer.core.LockNames;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.LongRange;
import net.jqwik.api.constraints.Size;

/** The layout of composite keys is unambiguous, and every record reads back as written. */
class StoreCodecProperties {

    @Property
    void dataKey_distinctScopeKeyPairs_encodeDistinctly(
            @ForAll("shortNames") String scopeA, @ForAll @Size(max = 6) byte[] keyA,
            @ForAll("shortNames") String scopeB, @ForAll @Size(max = 6) byte[] keyB) {
        boolean samePair = scopeA.equals(scopeB) && Arrays.equals(keyA, keyB);
        boolean sameBytes = Arrays.equals(StoreCodec.dataKey(scopeA, keyA), StoreCodec.dataKey(scopeB, keyB));
        assertThat(sameBytes).isEqualTo(samePair);
    }

    @Property
    void dataKey_scopeSuffixMovedIntoKey_doesNotCollide(@ForAll("shortNames") String scope,
            @ForAll @Size(max = 6) byte[] key) {
        byte[] movedKey = new byte[key.length + 1];
        movedKey[0] = 'x';
        System.arraycopy(key, 0, movedKey, 1, key.length);
        assertThat(StoreCodec.dataKey(scope + "x", key)).isNotEqualTo(StoreCodec.dataKey(scope, movedKey));
    }

    @Property
    void idempotencyKey_splitsBackIntoScopeAndKey(@ForAll("names") String scope, @ForAll("names") String key) {
        String[] parts = StoreCodec.splitIdempotencyKey(StoreCodec.idempotencyKey(scope, key));
        assertThat(parts).containsExactly(scope, key);
    }

    @Property
    void fenceValue_roundTrips(@ForAll("names") String lock, @ForAll FencePolicy policy,
            @ForAll @LongRange(min = 0, max = Long.MAX_VALUE - 1) long accepted,
            @ForAll @LongRange(min = 0) long revision) {
        StoreCodec.FenceRecord record = StoreCodec.decodeFence(StoreCodec.fenceValue(lock, policy, accepted, revision));
        assertThat(record).isEqualTo(new StoreCodec.FenceRecord(lock, policy, accepted, revision));
    }

    @Property
    void dataValue_roundTrips(@ForAll @LongRange(min = 1) long token, @ForAll @Size(max = 64) byte[] value) {
        StoreCodec.DataRecord record = StoreCodec.decodeData(StoreCodec.dataValue(token, value));
        assertThat(record.token()).isEqualTo(token);
        assertThat(record.value()).isEqualTo(value);
    }

    /** Valid scope and lock names: what the engine lets through {@link LockNames#check}. */
    @Provide
    Arbitrary<String> names() {
        return Arbitraries.strings().ofMinLength(1).ofMaxLength(40).filter(StoreCodecProperties::isValidName);
    }

    @Provide
    Arbitrary<String> shortNames() {
        return Arbitraries.strings().withChars("ab\u00e9\u6f22").ofMinLength(1).ofMaxLength(4);
    }

    private static boolean isValidName(String name) {
        try {
            LockNames.check(name);
            return name.getBytes(StandardCharsets.UTF_8).length <= LockNames.BYTES_MAX;
        } catch (RuntimeException e) {
            return false;
        }
    }
}
