package io.fencer.s3;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.PutObjectResponse;
import software.amazon.awssdk.services.s3.model.S3Exception;

/**
 * The control under every other test of this module: the S3 server started by the tests really applies the
 * conditions of a PutObject ({@code If-Match}, {@code If-None-Match: *}), as AWS S3 does. Were it to ignore them, the
 * fence could not hold and the other tests would prove nothing.
 */
class ConditionalWritesTest {
    @Test
    void putObject_wrongIfMatch_isRefusedWith412AndObjectStays() {
        try (S3Client s3 = S3TestServer.get().client()) {
            PutObjectResponse first = put(s3, "cond/if-match", "one", b -> {});
            assertThatThrownBy(() -> put(s3, "cond/if-match", "two", b -> b.ifMatch("\"0123456789abcdef\"")))
                    .isInstanceOfSatisfying(S3Exception.class, e -> assertThat(e.statusCode()).isEqualTo(412));
            assertThat(get(s3, "cond/if-match")).isEqualTo("one");

            PutObjectResponse second = put(s3, "cond/if-match", "three", b -> b.ifMatch(first.eTag()));
            assertThat(second.eTag()).isNotEqualTo(first.eTag());
            assertThat(get(s3, "cond/if-match")).isEqualTo("three");
            assertThatThrownBy(() -> put(s3, "cond/if-match", "four", b -> b.ifMatch(first.eTag())))
                    .as("the ETag read before the last replace no longer matches")
                    .isInstanceOfSatisfying(S3Exception.class, e -> assertThat(e.statusCode()).isEqualTo(412));
        }
    }

    @Test
    void putObject_ifNoneMatchOnExistingKey_isRefusedWith412() {
        try (S3Client s3 = S3TestServer.get().client()) {
            put(s3, "cond/if-none-match", "one", b -> b.ifNoneMatch("*"));
            assertThatThrownBy(() -> put(s3, "cond/if-none-match", "two", b -> b.ifNoneMatch("*")))
                    .isInstanceOfSatisfying(S3Exception.class, e -> assertThat(e.statusCode()).isEqualTo(412));
            assertThat(get(s3, "cond/if-none-match")).isEqualTo("one");
        }
    }

    private static PutObjectResponse put(S3Client s3, String key, String content,
            java.util.function.Consumer<software.amazon.awssdk.services.s3.model.PutObjectRequest.Builder> condition) {
        return s3.putObject(b -> condition.accept(b.bucket(S3TestServer.BUCKET).key(key)),
                RequestBody.fromString(content, StandardCharsets.UTF_8));
    }

    private static String get(S3Client s3, String key) {
        return s3.getObjectAsBytes(b -> b.bucket(S3TestServer.BUCKET).key(key)).asUtf8String();
    }
}
