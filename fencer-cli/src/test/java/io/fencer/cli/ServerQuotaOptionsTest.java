package io.fencer.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.server.IdentityQuotas;
import io.fencer.server.ServerConfig;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** {@code fencer server}'s per-identity quota options arrive in the server's settings. */
class ServerQuotaOptionsTest {
    @TempDir
    Path directory;

    @Test
    void quotaOptions_given_arriveInTheConfig_andDefaultToATenthOfTheServersLimits() {
        ServerConfig set = config("--sessions-per-identity-max", "5", "--locks-per-identity-max", "7",
                "--waiters-per-identity-max", "2", "--watchers-per-identity-max", "9");
        ServerConfig defaults = config();

        assertThat(set.quotas()).isEqualTo(new IdentityQuotas(5, 7, 2, 9));
        assertThat(defaults.quotas()).isEqualTo(IdentityQuotas.DEFAULT).isEqualTo(new IdentityQuotas(10_000, 100_000,
                1_000, 100));
    }

    @Test
    void quotaOptions_belowOne_areAUsageErrorNamingThem() {
        assertThatThrownBy(() -> config("--locks-per-identity-max", "0"))
                .isInstanceOf(CommandLine.ParameterException.class)
                .hasMessageContaining("--locks-per-identity-max").hasMessageContaining("at least 1");
        assertThatThrownBy(() -> config("--watchers-per-identity-max", "0"))
                .isInstanceOf(CommandLine.ParameterException.class)
                .hasMessageContaining("--watchers-per-identity-max").hasMessageContaining("at least 1");
    }

    private ServerConfig config(String... options) {
        CommandLine commandLine = Main.newCommandLine(new Main());
        String[] arguments = new String[options.length + 4];
        arguments[0] = "server";
        arguments[1] = "--data";
        arguments[2] = directory.toString();
        arguments[3] = "--port=0";
        System.arraycopy(options, 0, arguments, 4, options.length);
        commandLine.parseArgs(arguments);
        return commandLine.getSubcommands().get("server").<ServerCommand>getCommand().config();
    }
}
