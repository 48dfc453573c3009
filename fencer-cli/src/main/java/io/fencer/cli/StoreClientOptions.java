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

/**
 * The options the {@code kv} commands share: where the store is, and optionally where the lock service is, which
 * a stale refusal is then diagnosed with; and the TLS both are reached with.
 */
final class StoreClientOptions {
    @Option(names = "--store", split = ",", paramLabel = "HOST:PORT", converter = Converters.Endpoint.class,
            description = "The store's address: a store-server, or a server hosting the store; for the replicated "
                    + "store of a group, its peers comma-separated (the leader answers). Default: env FENCER_STORE, "
                    + "or else the peers given to --server, or else a local server (127.0.0.1:7070).")
    List<String> store;

    @Option(names = "--server", split = ",", paramLabel = "HOST:PORT", converter = Converters.Endpoint.class,
            description = "The lock service's peers, comma-separated: when given, a stale refusal is diagnosed "
                    + "(superseded by which token, or an inconsistency).")
    List<String> lockService;

    @Mixin
    ClientTlsOptions tls;

    @Mixin
    TimeoutOptions timeouts;

    @Spec(Spec.Target.MIXEE)
    CommandSpec command;

    /** Returns true when a lock service was named, so stale refusals can be diagnosed. */
    boolean diagnoses() {
        return lockService != null && !lockService.isEmpty();
    }

    /** Connects to the lock service, or returns null when none was named; the caller closes it. */
    FencerClient connectLockService() {
        if (!diagnoses()) {
            return null;
        }
        if (lockService.size() > ClientOptions.ENDPOINTS_MAX) {
            throw new ParameterException(command.commandLine(), "--server names " + lockService.size()
                    + " endpoints, more than the " + ClientOptions.ENDPOINTS_MAX + " allowed");
        }
        return timeouts.apply(tls.apply(Fencer.newBuilder().endpoints(lockService.toArray(String[]::new)))).build();
    }

    /**
     * Returns the store's endpoints: {@code --store}, else env {@code FENCER_STORE}, else the {@code --server} peers
     * (a group's peers host its store), else the default of a single local server.
     */
    String storeEndpoints() {
        if (store != null && !store.isEmpty()) {
            return String.join(",", store);
        }
        String fromEnvironment = System.getenv("FENCER_STORE");
        if (fromEnvironment != null && !fromEnvironment.isBlank()) {
            return fromEnvironment.trim();
        }
        return diagnoses() ? String.join(",", lockService) : DEFAULT_STORE;
    }

    /** The store of a `fencer server` started with its defaults. */
    static final String DEFAULT_STORE = "127.0.0.1:7070";

    /** Connects to the store, diagnosing with {@code lockService} when not null; the caller closes it. */
    FencedStore connectStore(FencerClient lockService) {
        String endpoints = storeEndpoints();
        if (endpoints.split(",").length > ClientOptions.ENDPOINTS_MAX) {
            throw new ParameterException(command.commandLine(), "--store names " + endpoints.split(",").length
                    + " endpoints, more than the " + ClientOptions.ENDPOINTS_MAX + " allowed");
        }
        FencedStore.Builder builder;
        try {
            builder = timeouts.apply(tls.apply(Fencer.newStoreBuilder().endpoint(endpoints)));
        } catch (IllegalArgumentException e) {
            throw new ParameterException(command.commandLine(), "bad store endpoints '" + endpoints + "': "
                    + e.getMessage());
        }
        if (lockService != null) {
            builder.lockService(lockService);
        }
        return builder.build();
    }
}
