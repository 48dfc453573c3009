package io.fencer.cli;

import java.io.BufferedOutputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.nio.charset.Charset;
import java.nio.charset.StandardCharsets;

/**
 * How the command reads its arguments and writes its output in the user's locale.
 *
 * <p>The JVM decodes the command line with the locale's character set ({@code sun.jnu.encoding}), and no option
 * changes that. In the C or POSIX locale, the default of many servers, containers and service units, that set is
 * ASCII, and every byte above 127 of an argument becomes U+FFFD: {@code fencer lock exec café} there locked
 * {@code caf\uFFFD\uFFFD}, another lock than the same command's on a machine with a UTF-8 locale, so the two did not
 * exclude each other. An argument holding U+FFFD is therefore refused before anything runs: the JVM could not read
 * what was typed (a name, a key, the command to run), and nothing can recover it.
 *
 * <p>The output goes the other way: in an ASCII locale the JVM writes every other character as {@code ?}, so a lock
 * named elsewhere printed as {@code caf?} in {@code lock status}, and in its {@code --json}. There the command writes
 * UTF-8, which loses nothing and is what JSON is, as Python does in the C locale; any other locale's set (UTF-8,
 * ISO-8859-1) is kept, since it is the terminal's.
 */
final class ConsoleCharset {
    private static final char UNDECODED = '\uFFFD';
    private static final int BUFFER_BYTES = 8192;

    private ConsoleCharset() {}

    /** Returns the index of the first argument holding U+FFFD, or -1. */
    static int undecodedArgument(String[] args) {
        for (int i = 0; i < args.length; i++) {
            if (args[i].indexOf(UNDECODED) >= 0) {
                return i;
            }
        }
        return -1;
    }

    /**
     * The refusal of argument {@code index} (from 0) of {@code count}, in a locale whose character set is
     * {@code decodedWith}. Names the argument's place, not its text: it may be a secret, and what shows of it is
     * not what was typed anyway.
     */
    static String undecodedMessage(int index, int count, String decodedWith) {
        return "fencer: argument " + (index + 1) + " of " + count + " holds bytes this locale's character set ("
                + decodedWith + ") cannot read, so a lock name, key or command would not be what you typed: run "
                + "fencer in a UTF-8 locale (for example LANG=C.UTF-8), or keep the arguments ASCII";
    }

    /** True when {@code nativeEncoding}, the locale's character set, is ASCII: the C or POSIX locale. */
    static boolean asciiLocale(String nativeEncoding) {
        try {
            return nativeEncoding != null && Charset.forName(nativeEncoding).equals(StandardCharsets.US_ASCII);
        } catch (IllegalArgumentException e) { // unknown or malformed: not ASCII as far as we can tell
            return false;
        }
    }

    /** The locale's character set as this JVM knows it ({@code native.encoding}, Java 17 and later). */
    static String nativeEncoding() {
        return System.getProperty("native.encoding", System.getProperty("sun.jnu.encoding"));
    }

    /**
     * Makes {@link System#out} and {@link System#err} write UTF-8 (the demo and chaos runs print there), buffered
     * and flushed at each line as the JVM's own streams are.
     */
    static void useUtf8ForStandardStreams() {
        System.setOut(new PrintStream(new BufferedOutputStream(new FileOutputStream(FileDescriptor.out), BUFFER_BYTES),
                true, StandardCharsets.UTF_8));
        System.setErr(new PrintStream(new BufferedOutputStream(new FileOutputStream(FileDescriptor.err), BUFFER_BYTES),
                true, StandardCharsets.UTF_8));
    }

    /** A UTF-8 writer on {@code stream} that flushes each line, as picocli's own writers do. */
    static PrintWriter utf8Writer(PrintStream stream) {
        return new PrintWriter(new OutputStreamWriter(stream, StandardCharsets.UTF_8), true);
    }
}
