package io.fencer.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.core.FencePolicy;
import io.fencer.core.FencingToken;
import io.fencer.core.InternalException;
import io.fencer.core.LockNames;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.List;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Assume;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.LongRange;
import net.jqwik.api.constraints.Size;

/** The layout of composite keys and ops digests is unambiguous, and every record reads back as written. */
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

    @Property
    void idempotencyValue_withAndWithoutDigest_roundTrips(@ForAll @LongRange(min = 1) long token,
            @ForAll @LongRange(min = 1) long revision, @ForAll @IntRange(min = 1, max = 1000) int opsApplied,
            @ForAll @LongRange(min = 1) long sequence, @ForAll @Size(32) byte[] digest, @ForAll boolean withDigest) {
        StoreCodec.IdempotencyRecord record = new StoreCodec.IdempotencyRecord(token, token, revision, opsApplied,
                sequence, withDigest ? digest : null);

        StoreCodec.IdempotencyRecord decoded = StoreCodec.decodeIdempotency(StoreCodec.idempotencyValue(record));

        assertThat(decoded).usingRecursiveComparison().isEqualTo(record);
    }

    @Property
    void idempotencyValue_withDigest_beginsWithTheLayoutOlderBuildsRead(@ForAll @LongRange(min = 1) long token,
            @ForAll @LongRange(min = 1) long revision, @ForAll @LongRange(min = 1) long sequence,
            @ForAll @Size(32) byte[] digest) {
        byte[] older = ByteBuffer.allocate(37).put((byte) 1).putLong(token).putLong(token).putLong(revision)
                .putInt(1).putLong(sequence).array();

        byte[] current = StoreCodec.idempotencyValue(new StoreCodec.IdempotencyRecord(token, token, revision, 1,
                sequence, digest));

        assertThat(Arrays.copyOf(current, older.length)).as("an older build reads these and ignores the rest")
                .isEqualTo(older);
        assertThat(Arrays.copyOfRange(current, older.length, current.length)).isEqualTo(digest);
        assertThat(StoreCodec.decodeIdempotency(older).opsDigest()).as("a record from before digests").isNull();
    }

    @Property
    void decodeIdempotency_trailingBytesThatAreNoDigest_failsLoudly(@ForAll @IntRange(min = 1, max = 40) int extra) {
        Assume.that(extra != OpsDigest.BYTES);
        byte[] bytes = ByteBuffer.allocate(37 + extra).put((byte) 1).putLong(1).putLong(1).putLong(1).putInt(1)
                .putLong(1).array();

        assertThatThrownBy(() -> StoreCodec.decodeIdempotency(bytes)).isInstanceOf(InternalException.class)
                .hasMessageContaining(extra + " bytes after its sequence");
    }

    @Property
    void opsDigest_distinctRequests_digestDistinctly(@ForAll("shortNames") String scopeA,
            @ForAll("requestOps") List<Op> opsA, @ForAll @LongRange(min = 1, max = 3) long tokenA,
            @ForAll("shortNames") String scopeB, @ForAll("requestOps") List<Op> opsB,
            @ForAll @LongRange(min = 1, max = 3) long tokenB) {
        boolean sameRequest = scopeA.equals(scopeB) && tokenA == tokenB && opsA.equals(opsB);

        byte[] digestA = OpsDigest.of(scopeA, new FencingToken(scopeA, tokenA), opsA);
        byte[] digestB = OpsDigest.of(scopeB, new FencingToken(scopeB, tokenB), opsB);

        assertThat(digestA).hasSize(OpsDigest.BYTES);
        assertThat(OpsDigest.matches(digestA, digestB)).isEqualTo(sameRequest);
        assertThat(OpsDigest.matches(null, digestB)).as("a record without a digest matches").isTrue();
    }

    @Property
    void opsDigest_bytesMovedBetweenKeyAndValue_differs(@ForAll @Size(min = 1, max = 6) byte[] key,
            @ForAll @Size(max = 6) byte[] value) {
        byte[] movedKey = Arrays.copyOf(key, key.length + 1);
        movedKey[key.length] = 'x';
        byte[] movedValue = new byte[value.length + 1];
        movedValue[0] = 'x';
        System.arraycopy(value, 0, movedValue, 1, value.length);
        FencingToken token = new FencingToken("s", 1);

        assertThat(OpsDigest.of("s", token, List.of(Op.put(movedKey, value))))
                .isNotEqualTo(OpsDigest.of("s", token, List.of(Op.put(key, movedValue))));
        assertThat(OpsDigest.of("s", token, List.of(Op.put(key, new byte[0]))))
                .isNotEqualTo(OpsDigest.of("s", token, List.of(Op.delete(key))));
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

    /** One to three ops over a tiny alphabet of keys and values, so equal requests are drawn often. */
    @Provide
    Arbitrary<List<Op>> requestOps() {
        Arbitrary<byte[]> small = Arbitraries.of("a", "b", "ab").map(text -> text.getBytes(StandardCharsets.UTF_8));
        Arbitrary<Op> put = Combinators.combine(small, small).as(Op::put);
        Arbitrary<Op> delete = small.map(Op::delete);
        return Arbitraries.oneOf(put, delete).list().ofMinSize(1).ofMaxSize(3);
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
