package io.fencer.s3;

import io.fencer.core.FencingToken;
import java.util.Arrays;
import java.util.Objects;

/**
 * An object of a fenced bucket as one fence read named it: its content and the token whose write committed it.
 *
 * @param name the object's name in the fenced bucket
 * @param content the object's bytes (a copy; the caller may keep it)
 * @param writer the token of the fenced write that committed this content
 */
public record FencedObject(String name, byte[] content, FencingToken writer) {
    public FencedObject {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(writer, "writer");
        content = content.clone();
    }

    @Override
    public byte[] content() {
        return content.clone();
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof FencedObject object && name.equals(object.name) && writer.equals(object.writer)
                && Arrays.equals(content, object.content);
    }

    @Override
    public int hashCode() {
        return Objects.hash(name, writer, Arrays.hashCode(content));
    }

    @Override
    public String toString() {
        return "FencedObject[" + name + ", " + content.length + " bytes, written by " + writer + "]";
    }
}
