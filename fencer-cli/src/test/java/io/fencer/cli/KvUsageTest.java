package io.fencer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.client.ScopeInfo;
import io.fencer.client.WriteReceipt;
import io.fencer.core.FencePolicy;
import io.fencer.core.FencingToken;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Usage of {@code kv} and {@code bench store}, checked before connecting anywhere, and their output forms. */
class KvUsageTest {
    private static final String T32 = new FencingToken("orders", 32).sequencer();

    @Test
    void help_topLevel_listsKvAndTheStaleExitCode() {
        CommandRun run = CommandRun.run("--help");

        assertThat(run.exitCode()).isZero();
        assertThat(run.out()).contains("kv", "5   stale token");
    }

    @Test
    void help_kvPut_describesTokenStoreAndIdempotency() {
        CommandRun run = CommandRun.run("kv", "put", "--help");

        assertThat(run.exitCode()).isZero();
        assertThat(run.out()).contains("--token", "--store", "--idempotency-key", "--server", "127.0.0.1:7070");
    }

    @ParameterizedTest(name = "{0}")
    @CsvSource(delimiter = '|', value = {
        "kv | Missing command: choose put, get, delete or fence",
        "kv put orders k v | Missing required option: '--token=SEQUENCER'",
        "kv put orders k v --token orders#32 | malformed sequencer 'orders#32'",
        "kv put orders k --token fencer1.b3JkZXJz.32 | Missing required parameter: 'VALUE'",
        "kv delete orders k | Missing required option: '--token=SEQUENCER'",
        "kv get orders k --token fencer1.b3JkZXJz.0 | is outside [1,",
        "kv get orders k --store nohost | 'nohost' is not host:port",
        "kv fence orders --store 127.0.0.1:0 | '127.0.0.1:0' has port 0, outside [1, 65535]",
        "bench store --writers 0 | --writers 0 is outside [1, 4096]",
        "bench store --scopes 10001 | --scopes 10001 is outside [1, 10000]",
        "bench store --value-bytes 2000000 | --value-bytes 2000000 is outside [0, 1048576]",
        "bench store --duration 0s | --duration must be positive",
        "bench store --store nohost | 'nohost' is not host:port",
    })
    void execute_badArguments_exitsTwoWithAMessageNamingTheProblem(String arguments, String message) {
        CommandRun run = CommandRun.run(arguments.trim().split(" +"));

        assertThat(run.exitCode()).as(run.err()).isEqualTo(Main.EXIT_USAGE);
        assertThat(run.err()).startsWith("fencer: ").contains(message).contains("--help' for more information");
        assertThat(run.out()).isEmpty();
    }

    @Test
    void execute_scopeNameTooLong_isUsageError() {
        CommandRun run = CommandRun.run("kv", "fence", "s".repeat(257));

        assertThat(run.exitCode()).isEqualTo(Main.EXIT_USAGE);
        assertThat(run.err()).contains("scope", "257 bytes");
    }

    @Test
    void text_receipt_namesKeyScopeTokenAndRevision() {
        WriteReceipt receipt = new WriteReceipt("orders", 32, 32, 7, 1, false);

        assertThat(KvCommand.text("put", "orders", "order-17", T32, receipt))
                .isEqualTo("ok: put 'order-17' in scope 'orders' with orders#32 (accepted orders#32, revision 7)");
        assertThat(KvCommand.toJson("orders", "order-17", T32, receipt).toString()).isEqualTo("{\"format\":1,"
                + "\"scope\":\"orders\","
                + "\"key\":\"order-17\",\"token\":\"orders#32\",\"tokenValue\":32,\"accepted\":32,\"revision\":7,"
                + "\"opsApplied\":1,\"replayed\":false}");
    }

    @Test
    void text_scope_existingAndNew() {
        assertThat(KvCommand.text(new ScopeInfo("orders", "orders", FencePolicy.AT_LEAST, 32, 7, true)))
                .isEqualTo("scope 'orders': lock 'orders', policy AT_LEAST, accepted orders#32, revision 7");
        assertThat(KvCommand.text(new ScopeInfo("fresh", "fresh", FencePolicy.AT_LEAST, 0, 0, false)))
                .isEqualTo("scope 'fresh' does not exist yet: its first write binds it to lock 'fresh', policy"
                        + " AT_LEAST");
        assertThat(KvCommand.toJson(new ScopeInfo("fresh", "fresh", FencePolicy.STRICT, 0, 0, false)).toString())
                .isEqualTo("{\"format\":1,\"scope\":\"fresh\",\"lock\":\"fresh\",\"policy\":\"STRICT\",\"accepted\":0,"
                        + "\"acceptedToken\":null,\"revision\":0,\"exists\":false}");
    }
}
