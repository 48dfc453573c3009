package io.fencer.cli;

import io.fencer.server.tls.TlsFiles;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.file.Path;
import java.util.regex.Pattern;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * The TLS options of {@code fencer server} and {@code fencer store-server}, and the rule that keeps a plaintext
 * server off the network: bound to anything but a loopback address, it refuses to start without TLS unless told
 * {@code --insecure}.
 */
final class ServerTlsOptions {
    private static final Pattern IP_V4 = Pattern.compile("\\d{1,3}(\\.\\d{1,3}){3}");

    @Option(names = "--tls-cert", paramLabel = "FILE",
            description = "Serve TLS on every port with this certificate (PEM; from 'fencer certs': server.pem); "
                    + "peers present it to each other (default: plaintext).")
    Path certificateFile;

    @Option(names = "--tls-key", paramLabel = "FILE",
            description = "The key of --tls-cert (PEM, unencrypted PKCS#8).")
    Path keyFile;

    @Option(names = "--tls-ca", paramLabel = "FILE",
            description = "Require client certificates issued by this CA (PEM) on the client and admin ports; "
                    + "their CN is the client's identity. Peers of a group present certificates of it too.")
    Path caFile;

    @Option(names = "--insecure",
            description = "Serve plaintext on a non-loopback --host anyway: anyone who can reach the ports can act "
                    + "as any client.")
    boolean insecure;

    @Spec(Spec.Target.MIXEE)
    CommandSpec command;

    /**
     * Returns the TLS files these options name, read and checked now, or null for plaintext; refuses a plaintext
     * server on a non-loopback {@code host} unless {@code --insecure}.
     */
    TlsFiles files(String host) {
        if ((certificateFile == null) != (keyFile == null)) {
            throw usage("--tls-cert and --tls-key go together: "
                    + (certificateFile == null ? "--tls-key " + keyFile : "--tls-cert " + certificateFile)
                    + " was given alone");
        }
        if (certificateFile == null) {
            if (caFile != null) {
                throw usage("--tls-ca " + caFile + " needs --tls-cert and --tls-key: the server's own certificate");
            }
            if (!insecure && !isLoopback(host)) {
                throw usage("--host " + host + " is not a loopback address and TLS is off: anyone who can reach it "
                        + "could act as any client. Give --tls-cert and --tls-key (see 'fencer certs'), or --insecure "
                        + "to serve plaintext anyway");
            }
            return null;
        }
        TlsFiles files = new TlsFiles(certificateFile, keyFile, caFile);
        try {
            files.load(); // the server loads them again; checking here makes a bad file a usage error
        } catch (IllegalArgumentException e) {
            throw usage(e.getMessage());
        }
        return files;
    }

    /** Returns true for 127.0.0.0/8, ::1 and "localhost"; a host name is never resolved to find out. */
    static boolean isLoopback(String host) {
        if (host.equalsIgnoreCase("localhost")) {
            return true;
        }
        String literal = host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
        if (!IP_V4.matcher(literal).matches() && !literal.contains(":")) {
            return false; // a name: it may resolve to anything, now or later
        }
        try {
            return InetAddress.getByName(literal).isLoopbackAddress();
        } catch (UnknownHostException e) {
            return false; // not an address after all; the bind will say why
        }
    }

    private ParameterException usage(String message) {
        return new ParameterException(command.commandLine(), message);
    }
}
