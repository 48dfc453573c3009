package io.fencer.cli;

import io.fencer.client.StoreOp;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * The options the {@code kv} commands that write share: the token the write carries, its idempotency key and the
 * receipt's form; and the write itself ({@link #write}).
 */
final class FencedWriteOptions {
    @Option(names = "--token", required = true, paramLabel = "SEQUENCER", converter = KvCommand.SequencerText.class,
            description = "The grant's sequencer, as fencer lock acquire printed it: "
                    + "fencer1.<lock>.<value>, or with a signature fencer1.<lock>.<value>.<kid>.<mac>.")
    String sequencer;

    @Option(names = "--idempotency-key", paramLabel = "K",
            description = "Names this write: it is retried when its answer is lost, and applied at most once.")
    String idempotencyKey;

    @Option(names = "--json", description = "Print the receipt as one JSON object.")
    boolean json;

    /** The command this is mixed into: its output and error streams. */
    @Spec(Spec.Target.MIXEE)
    CommandSpec spec;

    /**
     * Writes {@code op} at {@code key} in {@code scope} to the store {@code options} reach, with these options;
     * {@code verb} names the write in the receipt.
     */
    int write(StoreClientOptions options, String verb, String scope, String key, StoreOp op) {
        return KvCommand.writeOne(spec, options, verb, scope, key, op, sequencer, idempotencyKey, json);
    }
}
