package io.fencer.cli;

import io.fencer.client.FencedStore;
import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import java.util.List;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** The options every client command shares: where the Fencer group is, and how to reach it (TLS). */
final class ClientOptions {
    /** The most endpoints one command accepts; a group has 1, 3 or 5 peers. */
    static final int ENDPOINTS_MAX = 16;

    @Option(names = "--server", split = ",", paramLabel = "HOST:PORT",
            defaultValue = "${env:FENCER_SERVER:-127.0.0.1:7070}", converter = Converters.Endpoint.class,
            description = "Client addresses of the group's peers, comma-separated (env FENCER_SERVER; default: "
                    + "${DEFAULT-VALUE}).")
    List<String> endpoints;

    @Mixin
    ClientTlsOptions tls;

    @Mixin
    TimeoutOptions timeouts;

    @Spec(Spec.Target.MIXEE)
    CommandSpec command;

    /** Connects to the group; the caller closes the client. */
    FencerClient connect() {
        return builder().build();
    }

    /** Returns a client builder for the group, with the TLS options applied. */
    FencerClient.Builder builder() {
        if (endpoints.size() > ENDPOINTS_MAX) {
            throw new ParameterException(command.commandLine(), "--server names " + endpoints.size()
                    + " endpoints, more than the " + ENDPOINTS_MAX + " allowed");
        }
        return timeouts.apply(tls.apply(Fencer.newBuilder().endpoints(endpoints.toArray(String[]::new))));
    }

    /** Returns a store client builder for {@code endpoint}, with the same TLS options as the group's. */
    FencedStore.Builder storeBuilder(String endpoint) {
        return timeouts.apply(tls.apply(Fencer.newStoreBuilder().endpoint(endpoint)));
    }
}
