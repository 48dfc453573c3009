package io.fencer.s3;

import io.fencer.core.LimitExceededException;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import software.amazon.awssdk.core.ResponseInputStream;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;
import software.amazon.awssdk.services.s3.model.NoSuchKeyException;
import software.amazon.awssdk.services.s3.model.S3Exception;
import software.amazon.awssdk.services.s3.model.S3Object;

/**
 * The S3 requests of a fenced bucket: the fence object read with its ETag and replaced only on a matching ETag, data
 * objects created only where no object is, read, and deleted. Every read is bounded in bytes.
 */
final class ObjectStore {
    /** What a fence read saw: the parsed fence and the ETag to condition its replacement on (null when absent). */
    record Fence(FenceState state, String etag) {}

    /** A data object: its bytes and its user metadata. */
    record Data(byte[] content, Map<String, String> metadata) {}

    private static final int PRECONDITION_FAILED = 412;
    /** AWS answers a conditional write that raced another one on the same key with 409 ConditionalRequestConflict. */
    private static final int CONFLICT = 409;

    private final S3Client s3;
    private final String bucket;
    private final String fenceKey;

    ObjectStore(S3Client s3, String bucket, String fenceKey) {
        this.s3 = s3;
        this.bucket = bucket;
        this.fenceKey = fenceKey;
    }

    String bucket() {
        return bucket;
    }

    String fenceKey() {
        return fenceKey;
    }

    /** Reads the fence object; an absent one is the empty fence of {@code scope}, with a null ETag. */
    Fence readFence(String scope) {
        Optional<Read> read = get(fenceKey, FenceState.OBJECT_BYTES_MAX);
        if (read.isEmpty()) {
            return new Fence(FenceState.empty(scope), null);
        }
        if (read.get().tooLarge) {
            throw new FenceObjectCorruptException(bucket, fenceKey, "it is larger than "
                    + FenceState.OBJECT_BYTES_MAX + " bytes, more than any fence this release writes");
        }
        try {
            return new Fence(FenceState.decode(read.get().bytes), read.get().response.eTag());
        } catch (FenceState.Corrupt e) {
            throw new FenceObjectCorruptException(bucket, fenceKey, e.getMessage());
        }
    }

    /**
     * Replaces the fence object with {@code next} only if it is still the one whose ETag is {@code etag} (If-Match), or
     * creates it only if none exists when {@code etag} is null (If-None-Match: *).
     *
     * @return false when the condition failed: another writer changed the fence since it was read
     */
    boolean replaceFence(FenceState next, String etag) {
        try {
            s3.putObject(b -> {
                b.bucket(bucket).key(fenceKey).contentType("text/plain; charset=utf-8");
                if (etag == null) {
                    b.ifNoneMatch("*");
                } else {
                    b.ifMatch(etag);
                }
            }, RequestBody.fromBytes(next.encode()));
            return true;
        } catch (S3Exception e) {
            if (e.statusCode() == PRECONDITION_FAILED || e.statusCode() == CONFLICT) {
                return false;
            }
            throw e;
        }
    }

    /** Creates data object {@code key}, refusing to replace any object already there (If-None-Match: *). */
    void createData(String key, byte[] content, Map<String, String> metadata) {
        try {
            s3.putObject(b -> b.bucket(bucket).key(key).metadata(metadata).ifNoneMatch("*"),
                    RequestBody.fromBytes(content));
        } catch (S3Exception e) {
            // The key is new to this write (a random suffix): an object there can only be this write's own, put by
            // an earlier attempt whose answer was lost before the SDK retried it.
            if (e.statusCode() != PRECONDITION_FAILED) {
                throw e;
            }
        }
    }

    /**
     * Reads data object {@code key}, at most {@code bytesMax} bytes.
     *
     * @return empty when no such object exists (a superseded one already deleted)
     * @throws LimitExceededException when it is larger than {@code bytesMax}
     */
    Optional<Data> readData(String key, long bytesMax) {
        Optional<Read> read = get(key, bytesMax);
        if (read.isPresent() && read.get().tooLarge) {
            throw new LimitExceededException("contentBytesMax", bytesMax, "object s3://" + bucket + "/" + key
                    + " is larger than contentBytesMax " + bytesMax + " bytes");
        }
        return read.map(r -> new Data(r.bytes, r.response.metadata()));
    }

    /** Deletes {@code key}, ignoring failures: what it removes is unreferenced garbage, a later sweep may take it. */
    void deleteQuietly(String key) {
        try {
            s3.deleteObject(b -> b.bucket(bucket).key(key));
        } catch (RuntimeException e) {
            // an unreferenced data object left behind costs storage, never correctness
        }
    }

    /** Lists the keys under {@code prefix}, at most {@code keysMax} of them, in key order. */
    List<String> listKeys(String prefix, int keysMax) {
        return s3.listObjectsV2Paginator(b -> b.bucket(bucket).prefix(prefix).maxKeys(Math.min(keysMax, 1000)))
                .contents().stream().limit(keysMax).map(S3Object::key).toList();
    }

    private record Read(GetObjectResponse response, byte[] bytes, boolean tooLarge) {}

    private Optional<Read> get(String key, long bytesMax) {
        try (ResponseInputStream<GetObjectResponse> in = s3.getObject(b -> b.bucket(bucket).key(key))) {
            Long length = in.response().contentLength();
            if (length != null && length > bytesMax) {
                in.abort();
                return Optional.of(new Read(in.response(), null, true));
            }
            byte[] bytes = readAtMost(in, bytesMax);
            return Optional.of(bytes == null ? new Read(in.response(), null, true)
                    : new Read(in.response(), bytes, false));
        } catch (NoSuchKeyException e) {
            return Optional.empty();
        } catch (IOException e) {
            throw new UncheckedIOException("reading s3://" + bucket + "/" + key + " failed", e);
        }
    }

    /** Returns the stream's bytes, or null when it holds more than {@code bytesMax}. */
    private static byte[] readAtMost(InputStream in, long bytesMax) throws IOException {
        byte[] bytes = in.readNBytes((int) Math.min(bytesMax + 1, Integer.MAX_VALUE - 8));
        return bytes.length > bytesMax ? null : bytes;
    }
}
