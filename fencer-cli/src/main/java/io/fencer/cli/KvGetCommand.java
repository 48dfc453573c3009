package io.fencer.cli;

import io.fencer.client.FencedStore;
import io.fencer.client.FencerClient;
import io.fencer.client.StaleWriteException;
import io.fencer.client.StoreValue;
import java.io.PrintWriter;
import java.util.Base64;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code fencer kv get SCOPE KEY [--token SEQUENCER]}: reads one key; with a token the read is fenced, so a stale
 * holder learns it (exit 5) on reads too.
 */
@Command(name = "get", mixinStandardHelpOptions = true,
        description = {"Prints the value at KEY in SCOPE (UTF-8 text); exit 1 when the key is absent. With --token "
                + "the read is fenced: exit 5 when the scope has accepted a newer token. --json adds who wrote it."})
final class KvGetCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "SCOPE", converter = KvCommand.ScopeName.class, description = "The scope.")
    String scope;

    @Parameters(index = "1", paramLabel = "KEY", description = "The key (UTF-8 text).")
    String key;

    @Option(names = "--token", paramLabel = "SEQUENCER", converter = KvCommand.SequencerText.class,
            description = "Fence the read with this grant's sequencer.")
    String sequencer;

    @Option(names = "--json", description = "Print an object: found, value, valueBase64, writtenBy, accepted.")
    boolean json;

    @Mixin
    StoreClientOptions options;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        StoreValue read;
        try (FencerClient lockService = options.connectLockService();
             FencedStore store = options.connectStore(lockService)) {
            try {
                read = sequencer == null ? store.get(scope, key) : store.get(scope, key, sequencer);
            } catch (StaleWriteException stale) {
                return KvCommand.reportStale(stale, options.diagnoses(), spec.commandLine().getErr());
            }
        }
        if (json) {
            out.println(toJson(read));
        } else if (read.present()) {
            out.println(read.valueUtf8());
        }
        out.flush();
        if (!read.present()) {
            spec.commandLine().getErr().println("fencer: no key '" + key + "' in scope '" + scope + "'");
            return Main.EXIT_ERROR;
        }
        return Main.EXIT_OK;
    }

    private Json toJson(StoreValue read) {
        return Json.object()
                .add("scope", scope)
                .add("key", key)
                .add("found", read.present())
                .add("value", read.valueUtf8())
                .add("valueBase64", read.present() ? Base64.getEncoder().encodeToString(read.value()) : null)
                .add("writtenBy", read.writtenBy())
                .add("accepted", read.accepted());
    }
}
