package io.fencer.cli;

import io.fencer.client.StoreOp;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;

/** {@code fencer kv delete SCOPE KEY --token SEQUENCER}: one fenced delete, acknowledged after fsync. */
@Command(name = "delete", mixinStandardHelpOptions = true,
        description = {"Deletes KEY in SCOPE with a lock's token (its sequencer); exit 5 when the scope has "
                + "accepted a newer token. Deleting an absent key is not an error."})
final class KvDeleteCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "SCOPE", converter = KvCommand.ScopeName.class, description = "The scope.")
    String scope;

    @Parameters(index = "1", paramLabel = "KEY", description = "The key (UTF-8 text).")
    String key;

    @Mixin
    FencedWriteOptions write;

    @Mixin
    StoreClientOptions options;

    @Override
    public Integer call() {
        return write.write(options, "deleted", scope, key, StoreOp.delete(key));
    }
}
