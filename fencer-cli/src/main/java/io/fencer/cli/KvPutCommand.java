package io.fencer.cli;

import io.fencer.client.StoreOp;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Parameters;

/** {@code fencer kv put SCOPE KEY VALUE --token SEQUENCER}: one fenced put, acknowledged after fsync. */
@Command(name = "put", mixinStandardHelpOptions = true,
        description = {"Puts VALUE at KEY in SCOPE with a lock's token (its sequencer); exit 5 when the scope has "
                + "accepted a newer token. KEY and VALUE are UTF-8 text."})
final class KvPutCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "SCOPE", converter = KvCommand.ScopeName.class,
            description = "The scope (by default bound to the lock of the same name).")
    String scope;

    @Parameters(index = "1", paramLabel = "KEY", description = "The key.")
    String key;

    @Parameters(index = "2", paramLabel = "VALUE", description = "The value.")
    String value;

    @Mixin
    FencedWriteOptions write;

    @Mixin
    StoreClientOptions options;

    @Override
    public Integer call() {
        return write.write(options, "put", scope, key, StoreOp.put(key, value));
    }
}
