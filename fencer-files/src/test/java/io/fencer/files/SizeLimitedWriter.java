package io.fencer.files;

import io.fencer.core.FencingToken;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/**
 * Writes one small file under token {@code args[2]} and prints {@code WROTE} or {@code FAILED <exception>}: started
 * under a file size limit ({@code ulimit -f}) smaller than the fence file, it is a writer whose file system takes only
 * part of a write, as a disk that fills up in the middle of one does.
 */
public final class SizeLimitedWriter {
    static final String FILE = "one-more.txt";

    private SizeLimitedWriter() {}

    public static void main(String[] args) throws Exception {
        FencedDirectory files = FencedDirectory.open(Path.of(args[0]), args[1]);
        try {
            files.write(new FencingToken(args[1], Long.parseLong(args[2])), FILE,
                    "small".getBytes(StandardCharsets.UTF_8));
            System.out.println("WROTE");
        } catch (Exception e) {
            System.out.println("FAILED " + e);
        }
    }
}
