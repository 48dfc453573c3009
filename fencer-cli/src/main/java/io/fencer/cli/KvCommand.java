package io.fencer.cli;

import io.fencer.client.FencedStore;
import io.fencer.client.FencerClient;
import io.fencer.client.ScopeInfo;
import io.fencer.client.StaleDiagnosis;
import io.fencer.client.StaleWriteException;
import io.fencer.client.StoreOp;
import io.fencer.client.WriteReceipt;
import io.fencer.core.FencingToken;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LockNames;
import io.fencer.core.Sequencer;
import java.io.PrintWriter;
import java.util.List;
import picocli.CommandLine.Command;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;
import picocli.CommandLine.TypeConversionException;

/**
 * {@code fencer kv}: the group of fenced key-value store commands, and what they share: converters, the stale
 * report (exit 5), and the text and JSON forms of receipts and scopes.
 */
// The subcommands are listed in CommandTree, which builds in full only those that a command line names.
@Command(name = "kv", mixinStandardHelpOptions = true,
        description = {"Read and write the fenced key-value store with a lock's token.",
            "A write with a token older than the scope's accepted one is refused: exit 5."})
final class KvCommand implements Runnable {
    @Spec
    CommandSpec spec;

    @Override
    public void run() {
        throw new ParameterException(spec.commandLine(), "Missing command: choose put, get, delete or fence");
    }

    /** Converts a scope name after checking it as the store would (1 to 256 bytes of UTF-8, no controls). */
    static final class ScopeName implements ITypeConverter<String> {
        @Override
        public String convert(String value) {
            try {
                return LockNames.check("scope", value);
            } catch (InvalidArgumentException e) {
                throw new TypeConversionException(e.getMessage());
            }
        }
    }

    /** Converts a sequencer ({@code fencer1.<lock>.<value>[.<kid>.<mac>]}) to itself after checking its form. */
    static final class SequencerText implements ITypeConverter<String> {
        @Override
        public String convert(String value) {
            try {
                Sequencer.parse(value);
                return value;
            } catch (InvalidArgumentException e) {
                throw new TypeConversionException(e.getMessage() + " (pass the sequencer that 'fencer lock acquire'"
                        + " prints after the token)");
            }
        }
    }

    /**
     * Writes one op to a scope for {@code kv put} and {@code kv delete}, printing the receipt (text or JSON);
     * returns the exit code: 0, or 5 when the token was stale.
     */
    static int writeOne(CommandSpec spec, StoreClientOptions options, String verb, String scope, String key,
            StoreOp op, String sequencer, String idempotencyKey, boolean json) {
        PrintWriter out = spec.commandLine().getOut();
        try (FencerClient lockService = options.connectLockService();
             FencedStore store = options.connectStore(lockService)) {
            WriteReceipt receipt;
            try {
                receipt = store.write(scope, sequencer, List.of(op), idempotencyKey);
            } catch (StaleWriteException stale) {
                return reportStale(stale, options.diagnoses(), spec.commandLine().getErr());
            }
            out.println(json ? toJson(scope, key, sequencer, receipt) : text(verb, scope, key, sequencer, receipt));
        }
        out.flush();
        return Main.EXIT_OK;
    }

    /**
     * Prints the stale refusal, {@code fencer: stale token orders#31 refused by scope 'orders': accepted orders#32},
     * and, when a lock service was given, its diagnosis; returns exit code 5.
     */
    static int reportStale(StaleWriteException stale, boolean diagnose, PrintWriter err) {
        err.println("fencer: " + stale.getMessage());
        if (diagnose) {
            StaleDiagnosis diagnosis = stale.diagnose();
            err.println("fencer: diagnosis: " + diagnosis.kind() + ": " + diagnosis.detail());
        }
        err.flush();
        return Main.EXIT_STALE;
    }

    /** Returns the one-line account of an applied write. */
    static String text(String verb, String scope, String key, String sequencer, WriteReceipt receipt) {
        String lock = Sequencer.parse(sequencer).lock();
        return "ok: " + verb + " '" + key + "' in scope '" + scope + "' with " + lock + "#" + receipt.token()
                + " (accepted " + lock + "#" + receipt.accepted() + ", revision " + receipt.revision()
                + (receipt.replayed() ? ", replayed: an earlier attempt with this idempotency key applied it" : "")
                + ")";
    }

    static Json toJson(String scope, String key, String sequencer, WriteReceipt receipt) {
        FencingToken token = Sequencer.parse(sequencer);
        return Json.object()
                .add("scope", scope)
                .add("key", key)
                .add("token", token.toString())
                .add("tokenValue", receipt.token())
                .add("accepted", receipt.accepted())
                .add("revision", receipt.revision())
                .add("opsApplied", receipt.opsApplied())
                .add("replayed", receipt.replayed());
    }

    /** Returns the one-line account of a scope. */
    static String text(ScopeInfo info) {
        if (!info.exists()) {
            return "scope '" + info.scope() + "' does not exist yet: its first write binds it to lock '"
                    + info.lock() + "', policy " + info.policy();
        }
        return "scope '" + info.scope() + "': lock '" + info.lock() + "', policy " + info.policy() + ", accepted "
                + (info.accepted() == FencingToken.NONE ? "none" : info.lock() + "#" + info.accepted())
                + ", revision " + info.revision();
    }

    static Json toJson(ScopeInfo info) {
        return Json.object()
                .add("scope", info.scope())
                .add("lock", info.lock())
                .add("policy", info.policy().toString())
                .add("accepted", info.accepted())
                .add("acceptedToken", info.accepted() == FencingToken.NONE ? null
                        : info.lock() + "#" + info.accepted())
                .add("revision", info.revision())
                .add("exists", info.exists());
    }
}
