package io.fencer.cli;

import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import java.util.List;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** The options every client command shares: where the Fencer group is. */
final class ClientOptions {
    /** The most endpoints one command accepts; a group has 1, 3 or 5 peers. */
    static final int ENDPOINTS_MAX = 16;

    @Option(names = "--server", split = ",", paramLabel = "HOST:PORT", defaultValue = "127.0.0.1:7070",
            converter = Converters.Endpoint.class,
            description = "Client addresses of the group's peers, comma-separated (default: ${DEFAULT-VALUE}).")
    List<String> endpoints;

    @Spec(Spec.Target.MIXEE)
    CommandSpec command;

    /** Connects to the group; the caller closes the client. */
    FencerClient connect() {
        if (endpoints.size() > ENDPOINTS_MAX) {
            throw new ParameterException(command.commandLine(), "--server names " + endpoints.size()
                    + " endpoints, more than the " + ENDPOINTS_MAX + " allowed");
        }
        return Fencer.connect(endpoints.toArray(String[]::new));
    }
}
