package io.fencer.files;

import io.fencer.core.FencingToken;
import java.nio.file.Path;

/**
 * A writer that replaces one file as fast as it can with increasing tokens from {@code args[2]} on, printing
 * {@code WROTE <token>} after each write returns, until it is killed: the SIGKILL-during-a-write test's victim.
 */
public final class CrashingWriter {
    static final String FILE = "big.bin";
    static final int CONTENT_BYTES = 256 * 1024;

    private CrashingWriter() {}

    public static void main(String[] args) throws Exception {
        FencedDirectory files = FencedDirectory.open(Path.of(args[0]), args[1]);
        for (long token = Long.parseLong(args[2]); ; token++) {
            files.write(new FencingToken(args[1], token), FILE, content(token));
            System.out.println("WROTE " + token);
        }
    }

    /** The content token {@code token} writes: every byte derived from the token, so a torn file shows. */
    static byte[] content(long token) {
        byte[] bytes = new byte[CONTENT_BYTES];
        for (int i = 0; i < bytes.length; i++) {
            bytes[i] = (byte) (token * 31 + i / 4096);
        }
        return bytes;
    }
}
