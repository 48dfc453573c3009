package io.fencer.cli;

import io.fencer.core.FencerException;
import io.fencer.core.TokenKeys;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code fencer keygen}: makes a token key file ({@code kid=base64} lines) for {@code --token-key}. The lock
 * service signs every token with it and resources refuse tokens it did not sign, so a client cannot forge a huge
 * token and lock every honest holder out. Give the same file to every server and store server.
 */
@Command(name = "keygen", mixinStandardHelpOptions = true,
        description = "Writes a new random token key file (mode 600) for --token-key; without --out, prints it.")
final class KeygenCommand implements Callable<Integer> {
    @Option(names = "--kid", paramLabel = "ID", defaultValue = "k1",
            description = "The key id, 1 to 32 characters of [A-Za-z0-9_-], named in every signed token "
                    + "(default: ${DEFAULT-VALUE}).")
    String keyId;

    @Option(names = "--out", paramLabel = "FILE",
            description = "The file to create; it must not exist (default: print to standard output).")
    Path out;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws IOException {
        TokenKeys keys;
        try {
            keys = TokenKeys.generate(keyId);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), "--kid: " + e.getMessage());
        }
        PrintWriter stdout = spec.commandLine().getOut();
        if (out == null) {
            stdout.print(keys.toKeyFile());
            stdout.flush();
            return Main.EXIT_OK;
        }
        write(out, keys.toKeyFile());
        stdout.println("fencer keygen wrote key '" + keys.signingKeyId() + "' to " + out + " (mode 600)");
        stdout.flush();
        return Main.EXIT_OK;
    }

    /** Creates {@code file} readable by its owner only, before any key byte is written to it. */
    private static void write(Path file, String text) throws IOException {
        try {
            Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        } catch (UnsupportedOperationException notPosix) {
            Files.createFile(file);
        } catch (FileAlreadyExistsException e) {
            throw new IOException("key file " + file + " already exists; not overwriting it", e);
        }
        Files.writeString(file, text, StandardCharsets.UTF_8);
    }

    /**
     * Loads the key file of a {@code --token-key} option; null when the option is absent. An unreadable or invalid
     * file is a usage error naming it.
     */
    static TokenKeys load(CommandSpec spec, Path file) {
        if (file == null) {
            return null;
        }
        try {
            return TokenKeys.load(file);
        } catch (IOException e) {
            throw new ParameterException(spec.commandLine(), "--token-key " + file + " cannot be read: " + e);
        } catch (FencerException e) {
            throw new ParameterException(spec.commandLine(), "--token-key " + file + ": " + e.getMessage());
        }
    }
}
