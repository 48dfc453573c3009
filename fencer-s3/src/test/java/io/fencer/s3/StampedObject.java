package io.fencer.s3;

import java.util.Map;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.NoSuchKeyException;

/**
 * The check-then-act writer of the controls: an object at a fixed key stamped with the token that wrote it (user
 * metadata), checked by one request and replaced by another, unconditionally. A writer paused between the two replaces
 * whatever a newer holder put there meanwhile: the lost update the fenced bucket's conditional commit refuses.
 */
final class StampedObject {
    private final S3Client s3;
    private final String key;

    StampedObject(S3Client s3, String key) {
        this.s3 = s3;
        this.key = key;
    }

    /** The check: the token stamped on the object now (0 when there is none). */
    long stampedToken() {
        try {
            return Long.parseLong(s3.headObject(b -> b.bucket(S3TestServer.BUCKET).key(key)).metadata()
                    .getOrDefault(FencedBucket.META_TOKEN, "0"));
        } catch (NoSuchKeyException e) {
            return 0;
        }
    }

    /** The act: replaces the object, stamped with {@code token}, without a condition. */
    void put(long token, byte[] content) {
        s3.putObject(b -> b.bucket(S3TestServer.BUCKET).key(key).metadata(Map.of(FencedBucket.META_TOKEN,
                Long.toString(token))), RequestBody.fromBytes(content));
    }

    String content() {
        return s3.getObjectAsBytes(b -> b.bucket(S3TestServer.BUCKET).key(key)).asUtf8String();
    }
}
