package io.fencer.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.store.StoreOptions;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code --unit-bytes-buffered-max} and {@code --request-bytes-queued-max} of {@code fencer server} and
 * {@code fencer store-server} reach the store.
 */
class StoreLimitOptionsTest {
    @TempDir
    Path directory;

    @Test
    void unitBytesBufferedMax_given_arrivesInBothServersStoreOptions() {
        assertThat(server("--unit-bytes-buffered-max", "8388608").unitBytesBufferedMax()).isEqualTo(8_388_608);
        assertThat(storeServer("--unit-bytes-buffered-max", "8388608").unitBytesBufferedMax()).isEqualTo(8_388_608);
    }

    @Test
    void unitBytesBufferedMax_notGiven_isAQuarterOfTheHeapWithinItsBounds() {
        long expected = Math.max(StoreOptions.BATCH_BYTES_MAX_DEFAULT, Math.min(Runtime.getRuntime().maxMemory() / 4,
                StoreOptions.UNIT_BYTES_BUFFERED_MAX_CAP));

        assertThat(server().unitBytesBufferedMax()).isEqualTo(expected);
        assertThat(storeServer().unitBytesBufferedMax()).isEqualTo(expected);
    }

    @Test
    void unitBytesBufferedMax_belowOne_isAUsageErrorNamingIt() {
        assertThatThrownBy(() -> storeServer("--unit-bytes-buffered-max", "0"))
                .isInstanceOf(CommandLine.ParameterException.class)
                .hasMessageContaining("--unit-bytes-buffered-max 0").hasMessageContaining("at least 1 byte");
        assertThatThrownBy(() -> server("--unit-bytes-buffered-max", "-5"))
                .isInstanceOf(CommandLine.ParameterException.class)
                .hasMessageContaining("--unit-bytes-buffered-max -5");
    }

    @Test
    void requestBytesQueuedMax_given_arrivesInBothServersStoreOptions() {
        assertThat(server("--request-bytes-queued-max", "8388608").requestBytesQueuedMax()).isEqualTo(8_388_608);
        assertThat(storeServer("--request-bytes-queued-max", "8388608").requestBytesQueuedMax()).isEqualTo(8_388_608);
    }

    @Test
    void requestBytesQueuedMax_notGiven_isAnEighthOfTheHeapWithinItsBounds() {
        long expected = Math.max(StoreOptions.REQUEST_BYTES_QUEUED_MAX_FLOOR, Math.min(Runtime.getRuntime().maxMemory()
                / 8, StoreOptions.REQUEST_BYTES_QUEUED_MAX_CAP));

        assertThat(server().requestBytesQueuedMax()).isEqualTo(expected);
        assertThat(storeServer().requestBytesQueuedMax()).isEqualTo(expected);
    }

    @Test
    void requestBytesQueuedMax_belowOne_isAUsageErrorNamingIt() {
        assertThatThrownBy(() -> storeServer("--request-bytes-queued-max", "0"))
                .isInstanceOf(CommandLine.ParameterException.class)
                .hasMessageContaining("--request-bytes-queued-max 0").hasMessageContaining("at least 1 byte");
        assertThatThrownBy(() -> server("--request-bytes-queued-max", "-5"))
                .isInstanceOf(CommandLine.ParameterException.class)
                .hasMessageContaining("--request-bytes-queued-max -5");
    }

    private StoreOptions server(String... options) {
        CommandLine commandLine = parse("server", options);
        return commandLine.getSubcommands().get("server").<ServerCommand>getCommand().config().store();
    }

    private StoreOptions storeServer(String... options) {
        CommandLine commandLine = parse("store-server", options);
        return commandLine.getSubcommands().get("store-server").<StoreServerCommand>getCommand().config().store();
    }

    private CommandLine parse(String command, String... options) {
        CommandLine commandLine = Main.newCommandLine(new Main());
        String[] arguments = new String[options.length + 4];
        arguments[0] = command;
        arguments[1] = "--data";
        arguments[2] = directory.toString();
        arguments[3] = "--port=0";
        System.arraycopy(options, 0, arguments, 4, options.length);
        commandLine.parseArgs(arguments);
        return commandLine;
    }
}
