package io.fencer.cli;

import io.fencer.client.FencedStore;
import io.fencer.client.FencerClient;
import java.nio.file.Path;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * The TLS options every client command shares, each with an environment variable in its stead: the CA that issued
 * the servers' certificates and, for servers that require one, this client's certificate and key. One set serves
 * the lock service and the store alike.
 */
final class ClientTlsOptions {
    @Option(names = "--tls-ca", paramLabel = "FILE", defaultValue = "${env:FENCER_TLS_CA}",
            description = "Connect with TLS, trusting the servers' certificates this CA (PEM) issued "
                    + "(env FENCER_TLS_CA; default: plaintext).")
    Path caFile;

    @Option(names = "--tls-cert", paramLabel = "FILE", defaultValue = "${env:FENCER_TLS_CERT}",
            description = "This client's certificate (PEM), for servers that require one; its CN is the identity "
                    + "they know this client by (env FENCER_TLS_CERT).")
    Path certificateFile;

    @Option(names = "--tls-key", paramLabel = "FILE", defaultValue = "${env:FENCER_TLS_KEY}",
            description = "The key of --tls-cert (PEM, PKCS#8) (env FENCER_TLS_KEY).")
    Path keyFile;

    @Spec(Spec.Target.MIXEE)
    CommandSpec command;

    /** Returns {@code builder} with these TLS settings, unchanged when no CA was given. */
    FencerClient.Builder apply(FencerClient.Builder builder) {
        return enabled() ? builder.tls(caFile, certificateFile, keyFile) : builder;
    }

    /** Returns {@code builder} with these TLS settings, unchanged when no CA was given. */
    FencedStore.Builder apply(FencedStore.Builder builder) {
        return enabled() ? builder.tls(caFile, certificateFile, keyFile) : builder;
    }

    /** Returns true when TLS is asked for; a certificate or key without a CA is a usage error. */
    private boolean enabled() {
        if (caFile == null && (certificateFile != null || keyFile != null)) {
            throw new ParameterException(command.commandLine(), "--tls-cert and --tls-key need --tls-ca "
                    + "(or FENCER_TLS_CA): the CA that issued the servers' certificates");
        }
        if ((certificateFile == null) != (keyFile == null)) {
            throw new ParameterException(command.commandLine(), "--tls-cert and --tls-key go together: "
                    + (certificateFile == null ? "--tls-key " + keyFile : "--tls-cert " + certificateFile)
                    + " was given alone");
        }
        return caFile != null;
    }
}
