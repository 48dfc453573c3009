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
    @Option(names = "--store", paramLabel = "HOST:PORT", defaultValue = "${env:FENCER_STORE:-127.0.0.1:7070}",
            converter = Converters.Endpoint.class,
            description = "The store's address: a store-server, or a server hosting the store (env FENCER_STORE; "
                    + "default: ${DEFAULT-VALUE}).")
    String store;

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

    /** Connects to the store, diagnosing with {@code lockService} when not null; the caller closes it. */
    FencedStore connectStore(FencerClient lockService) {
        FencedStore.Builder builder = timeouts.apply(tls.apply(Fencer.newStoreBuilder().endpoint(store)));
        if (lockService != null) {
            builder.lockService(lockService);
        }
        return builder.build();
    }
}
