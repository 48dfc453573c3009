package io.fencer.files;

import io.fencer.core.FencingToken;
import java.util.Arrays;
import java.util.Objects;

/**
 * A file of a fenced directory as read under the directory's lock: its content and the token whose write put it
 * there, both of one moment.
 *
 * @param name the file's name in the directory
 * @param content the file's bytes (a copy; the caller may keep it)
 * @param writer the token of the fenced write that put this content in place
 */
public record FencedFile(String name, byte[] content, FencingToken writer) {
    public FencedFile {
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
        return other instanceof FencedFile file && name.equals(file.name) && writer.equals(file.writer)
                && Arrays.equals(content, file.content);
    }

    @Override
    public int hashCode() {
        return Objects.hash(name, writer, Arrays.hashCode(content));
    }

    @Override
    public String toString() {
        return "FencedFile[" + name + ", " + content.length + " bytes, written by " + writer + "]";
    }
}
