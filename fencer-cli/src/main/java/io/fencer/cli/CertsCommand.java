package io.fencer.cli;

import io.fencer.server.tls.CertificateAuthority;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.regex.Pattern;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code fencer certs}: makes a CA and the certificates of a quick start with TLS: {@code ca.pem} (give it to
 * clients as {@code --tls-ca} and to servers that require client certificates), {@code server.pem} with its key
 * (every peer's {@code --tls-cert}/{@code --tls-key}, also what peers present to each other), and one certificate
 * per {@code --client} whose CN is that client's identity. Keys are EC P-256, PKCS#8, mode 600. For production,
 * use your own CA; the CA key this writes signs anything it is asked to.
 */
@Command(name = "certs", mixinStandardHelpOptions = true,
        description = {"Writes a new CA, a server certificate and client certificates (PEM; keys mode 600) for TLS.",
            "Files: ca.pem, ca-key.pem, server.pem, server-key.pem, and NAME.pem, NAME-key.pem per --client."})
final class CertsCommand implements Callable<Integer> {
    /** The longest validity accepted: long-lived quick-start certificates are a liability, not a convenience. */
    static final int DAYS_MAX = 3_650;
    /** The most clients one run makes. */
    static final int CLIENTS_MAX = 100;
    private static final Pattern CLIENT_NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]{0,63}");

    @Option(names = "--out", paramLabel = "DIR", required = true,
            description = "The directory to write to (created if missing).")
    Path out;

    @Option(names = "--server-name", paramLabel = "DNS", split = ",",
            description = "DNS names the server certificate is valid for; repeatable (default: localhost).")
    List<String> serverNames = new ArrayList<>();

    @Option(names = "--server-ip", paramLabel = "IP", split = ",",
            description = "IP addresses the server certificate is valid for; repeatable (default: 127.0.0.1).")
    List<String> serverAddresses = new ArrayList<>();

    @Option(names = "--client", paramLabel = "NAME",
            description = "Make a client certificate with CN = NAME (the identity servers see); repeatable.")
    List<String> clients = new ArrayList<>();

    @Option(names = "--days", paramLabel = "N", defaultValue = "365",
            description = "How many days the certificates are valid (default: ${DEFAULT-VALUE}; at most " + DAYS_MAX
                    + ").")
    int days;

    @Option(names = "--force", description = "Overwrite files that exist (default: refuse).")
    boolean force;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws IOException {
        check();
        List<String> names = serverNames.isEmpty() && serverAddresses.isEmpty() ? List.of("localhost") : serverNames;
        List<String> addresses = serverNames.isEmpty() && serverAddresses.isEmpty() ? List.of("127.0.0.1")
                : serverAddresses;
        List<Path> files = files();
        if (!force) {
            for (Path file : files) {
                if (Files.exists(file)) {
                    throw new IOException(file + " exists; not overwriting it (--force replaces it)");
                }
            }
        }
        Duration validity = Duration.ofDays(days);
        CertificateAuthority ca = CertificateAuthority.create("fencer CA", validity);
        CertificateAuthority.Issued server;
        try {
            server = ca.issueServer(names, addresses, validity);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), "--server-name/--server-ip: " + e.getMessage());
        }
        Files.createDirectories(out);
        ca.ca().write(out.resolve("ca.pem"), out.resolve("ca-key.pem"), force);
        server.write(out.resolve("server.pem"), out.resolve("server-key.pem"), force);
        for (String client : clients) {
            ca.issueClient(client, validity).write(out.resolve(client + ".pem"), out.resolve(client + "-key.pem"),
                    force);
        }
        PrintWriter stdout = spec.commandLine().getOut();
        stdout.println("fencer certs wrote " + files.size() + " files to " + out + " (valid " + days + " days; server "
                + String.join(", ", concat(names, addresses)) + (clients.isEmpty() ? "" : "; clients "
                + String.join(", ", clients)) + "). Keys are mode 600; keep ca-key.pem away from the servers.");
        stdout.flush();
        return Main.EXIT_OK;
    }

    private void check() {
        if (days < 1 || days > DAYS_MAX) {
            throw usage("--days " + days + " is outside [1, " + DAYS_MAX + "]");
        }
        if (clients.size() > CLIENTS_MAX) {
            throw usage("--client is given " + clients.size() + " times, more than the " + CLIENTS_MAX + " allowed");
        }
        Set<String> seen = new LinkedHashSet<>();
        for (String client : clients) {
            if (!CLIENT_NAME.matcher(client).matches()) {
                throw usage("--client '" + client + "' is not 1 to 64 characters of [A-Za-z0-9._-] starting with a "
                        + "letter or digit (it names the files NAME.pem and NAME-key.pem)");
            }
            if (List.of("ca", "server").contains(client) || !seen.add(client)) {
                throw usage("--client '" + client + "' is given twice or names the CA's or server's files");
            }
        }
    }

    private List<Path> files() {
        List<Path> files = new ArrayList<>(List.of(out.resolve("ca.pem"), out.resolve("ca-key.pem"),
                out.resolve("server.pem"), out.resolve("server-key.pem")));
        for (String client : clients) {
            files.add(out.resolve(client + ".pem"));
            files.add(out.resolve(client + "-key.pem"));
        }
        return files;
    }

    private static List<String> concat(List<String> first, List<String> second) {
        List<String> all = new ArrayList<>(first);
        all.addAll(second);
        return all;
    }

    private ParameterException usage(String message) {
        return new ParameterException(spec.commandLine(), message);
    }
}
