package io.fencer.cli;

import io.fencer.client.FencedStore;
import io.fencer.client.ScopeInfo;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code fencer kv fence SCOPE}: the scope's bound lock, policy, accepted token and revision. */
@Command(name = "fence", mixinStandardHelpOptions = true,
        description = "Shows a scope's fence: its lock, policy, accepted token and revision.")
final class KvFenceCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "SCOPE", converter = KvCommand.ScopeName.class, description = "The scope.")
    String scope;

    @Option(names = "--json", description = "Print the scope as one JSON object.")
    boolean json;

    @Mixin
    StoreClientOptions options;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        ScopeInfo info;
        try (FencedStore store = options.connectStore(null)) {
            info = store.fence(scope);
        }
        PrintWriter out = spec.commandLine().getOut();
        out.println(json ? KvCommand.toJson(info) : KvCommand.text(info));
        out.flush();
        return Main.EXIT_OK;
    }
}
