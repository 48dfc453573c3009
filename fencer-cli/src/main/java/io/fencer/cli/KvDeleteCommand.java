package io.fencer.cli;

import io.fencer.client.StoreOp;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code fencer kv delete SCOPE KEY --token SEQUENCER}: one fenced delete, acknowledged after fsync. */
@Command(name = "delete", mixinStandardHelpOptions = true,
        description = {"Deletes KEY in SCOPE with a lock's token (its sequencer); exit 5 when the scope has "
                + "accepted a newer token. Deleting an absent key is not an error."})
final class KvDeleteCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "SCOPE", converter = KvCommand.ScopeName.class, description = "The scope.")
    String scope;

    @Parameters(index = "1", paramLabel = "KEY", description = "The key (UTF-8 text).")
    String key;

    @Option(names = "--token", required = true, paramLabel = "SEQUENCER", converter = KvCommand.SequencerText.class,
            description = "The grant's sequencer, as fencer lock acquire printed it: "
                    + "fencer1.<lock>.<value>, or with a signature fencer1.<lock>.<value>.<kid>.<mac>.")
    String sequencer;

    @Option(names = "--idempotency-key", paramLabel = "K",
            description = "Names this write: it is retried when its answer is lost, and applied at most once.")
    String idempotencyKey;

    @Option(names = "--json", description = "Print the receipt as one JSON object.")
    boolean json;

    @Mixin
    StoreClientOptions options;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        return KvCommand.writeOne(spec, options, "deleted", scope, key, StoreOp.delete(key), sequencer,
                idempotencyKey, json);
    }
}
