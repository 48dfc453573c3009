package io.fencer.server.http;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import com.google.protobuf.Descriptors.Descriptor;
import io.fencer.api.v1.AcquireRequest;
import io.fencer.api.v1.OpenSessionRequest;
import io.fencer.api.v1.WriteRequest;
import io.fencer.core.InvalidArgumentException;
import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;

/** The JSON checks of the HTTP port, one rule at a time, without a server. */
class StrictJsonTest {
    private static final Descriptor OPEN = OpenSessionRequest.getDescriptor();
    private static final Descriptor ACQUIRE = AcquireRequest.getDescriptor();
    private static final Descriptor WRITE = WriteRequest.getDescriptor();

    private static InvalidArgumentException refusal(String json, Descriptor type) {
        InvalidArgumentException error = catchThrowableOfType(InvalidArgumentException.class,
                () -> StrictJson.check(json, type, "test request"));
        assertThat(error).as("%s is refused", json).isNotNull();
        return error;
    }

    @Test
    void utf8_malformedBytes_areRefusedNamingTheFirstOffset() {
        byte[] body = "{\"lock\": \"x?y\"}".getBytes(StandardCharsets.US_ASCII);
        body[11] = (byte) 0xff;

        InvalidArgumentException error = catchThrowableOfType(InvalidArgumentException.class,
                () -> StrictJson.utf8(body, "test request"));

        assertThat(error.field()).isEqualTo("body");
        assertThat(error.value()).isEqualTo("0xFF");
        assertThat(error.getMessage()).contains("offset 11");
    }

    @Test
    void utf8_overlongFormAndEncodedSurrogate_areRefusedAndValidTextPasses() {
        byte[] overlong = {'"', (byte) 0xc0, (byte) 0xaf, '"'};
        byte[] surrogate = {'"', (byte) 0xed, (byte) 0xa0, (byte) 0x80, '"'};
        byte[] valid = "\"caf\u00e9 \ud83d\ude00\"".getBytes(StandardCharsets.UTF_8);

        assertThat(catchThrowableOfType(InvalidArgumentException.class, () -> StrictJson.utf8(overlong, "t"))
                .getMessage()).contains("offset 1");
        assertThat(catchThrowableOfType(InvalidArgumentException.class, () -> StrictJson.utf8(surrogate, "t"))
                .getMessage()).contains("offset 1");
        assertThat(StrictJson.utf8(valid, "t")).isEqualTo("\"caf\u00e9 \ud83d\ude00\"");
    }

    @Test
    void check_numberFieldGivenArrayStringWordObjectOrBoolean_isRefusedNamingFieldAndValue() {
        assertThat(refusal("{\"ttlMillis\": [30000]}", OPEN).value()).isEqualTo("[30000]");
        assertThat(refusal("{\"ttlMillis\": \"30 s\"}", OPEN).value()).isEqualTo("\"30 s\"");
        assertThat(refusal("{\"ttlMillis\": \" 30000\"}", OPEN).field()).isEqualTo("ttlMillis");
        assertThat(refusal("{\"ttl_millis\": {}}", OPEN).field()).as("the proto name works too")
                .isEqualTo("ttl_millis");
        assertThat(refusal("{\"ttlMillis\": false}", OPEN).getMessage()).contains("a boolean");
    }

    @Test
    void check_numberFieldGivenNumberDecimalStringOrNull_passes() {
        StrictJson.check("{\"ttlMillis\": 30000}", OPEN, "t");
        StrictJson.check("{\"ttlMillis\": \"30000\"}", OPEN, "t");
        StrictJson.check("{\"ttlMillis\": 3e4}", OPEN, "t");
        StrictJson.check("{\"ttlMillis\": null}", OPEN, "t");
    }

    @Test
    void check_integerWithAHugeExponentOrTooManyDigits_isRefusedNamingTheField() {
        // protobuf's parser turns such a value into a BigInteger of 10^99999999 (minutes of CPU) or parses a
        // hundred thousand digits in quadratic time: the check refuses them first, cheaply
        InvalidArgumentException exponent = refusal("{\"ttlMillis\": 1e99999999}", OPEN);
        InvalidArgumentException exponentString = refusal("{\"ttlMillis\": \"1e99999999\"}", OPEN);
        InvalidArgumentException fraction = refusal("{\"sessionId\": 0e-99999999}", ACQUIRE);
        InvalidArgumentException digits = refusal("{\"ttlMillis\": \"" + "9".repeat(100_000) + "\"}", OPEN);

        assertThat(exponent.field()).isEqualTo("ttlMillis");
        assertThat(exponent.value()).isEqualTo("1E+99999999");
        assertThat(exponent.getMessage()).contains("ttlMillis", "at most 20 digits");
        assertThat(exponentString.field()).isEqualTo("ttlMillis");
        assertThat(fraction.field()).isEqualTo("sessionId");
        assertThat(digits.field()).isEqualTo("ttlMillis");
        assertThat(digits.getMessage()).contains("100000 characters", "at most " + StrictJson.NUMBER_CHARS_MAX);
        assertThat(digits.value()).hasSizeLessThan(120);
    }

    @Test
    void check_integerInEveryFormProto3JsonAllows_passes() {
        StrictJson.check("{\"ttlMillis\": 18446744073709551615}", OPEN, "t");
        StrictJson.check("{\"ttlMillis\": \"3.0e4\"}", OPEN, "t");
        StrictJson.check("{\"ttlMillis\": 30000.000}", OPEN, "t");
        StrictJson.check("{\"sessionId\": 0}", ACQUIRE, "t");
    }

    @Test
    void check_stringFieldGivenNumber_isRefused() {
        InvalidArgumentException error = refusal("{\"lock\": 123}", ACQUIRE);

        assertThat(error.field()).isEqualTo("lock");
        assertThat(error.getMessage()).contains("a JSON string", "a number");
    }

    @Test
    void check_unpairedSurrogates_areRefusedAndPairsPass() {
        assertThat(refusal("{\"lock\": \"p\\ud800q\"}", ACQUIRE).value()).isEqualTo("p\\ud800q");
        assertThat(refusal("{\"lock\": \"p\\udc00\"}", ACQUIRE).field()).isEqualTo("lock");
        assertThat(refusal("{\"lock\": \"\\ud83d\"}", ACQUIRE).field()).isEqualTo("lock");
        assertThat(refusal("{\"lo\\ud800ck\": \"x\"}", ACQUIRE).getMessage()).contains("unpaired surrogate");
        StrictJson.check("{\"lock\": \"\\ud83d\\ude00\"}", ACQUIRE, "t");
    }

    @Test
    void check_nestedWrongType_namesItsPath() {
        InvalidArgumentException error = refusal("{\"scope\": \"s\", \"ops\": [{\"put\": {\"key\": \"aw==\", "
                + "\"value\": 5}}]}", WRITE);

        assertThat(error.field()).isEqualTo("ops[0].put.value");
        assertThat(refusal("{\"ops\": {\"put\": {}}}", WRITE).getMessage()).contains("a JSON array");
    }

    @Test
    void check_repeatedMemberLenientSyntaxOrNoObject_isRefused() {
        assertThat(refusal("{\"lock\": \"a\", \"lock\": \"b\"}", ACQUIRE).getMessage()).contains("twice");
        refusal("{lock: \"a\"}", ACQUIRE);
        refusal("{\"lock\": 'a'}", ACQUIRE);
        refusal("{\"lock\": \"a\",}", ACQUIRE);
        refusal("{\"lock\": \"a\"} x", ACQUIRE);
        refusal("\"a\"", ACQUIRE);
        refusal("{\"lock\": NaN}", ACQUIRE);
    }

    @Test
    void check_unknownMember_isLeftToProtobufsParser() {
        StrictJson.check("{\"ttlSeconds\": [1]}", OPEN, "t"); // refused after, by JsonFormat, naming the member
    }
}
