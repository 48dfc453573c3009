package io.fencer.chaos.process;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link Network#requireAvailable(long, List)}: the check a run with network faults makes before it starts
 * anything. The real network (root only) is exercised by fencer-it's {@code PartitionChaosProcessTest}, which also
 * runs the real check as user nobody.
 */
class NetworkTest {
    @TempDir
    Path dir;

    @Test
    void requireAvailable_notRoot_failsNamingRootAndTheUser() throws Exception {
        List<Path> directories = List.of(commands("ip", "tc"));

        assertThatThrownBy(() -> Network.requireAvailable(65534, directories))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("network faults (partition, flaky) need root (this process runs as uid 65534; network"
                        + " namespaces, veth and tc need CAP_NET_ADMIN: run as root or with sudo)");
    }

    @Test
    void requireAvailable_rootWithIpAndTc_passes() throws Exception {
        Network.requireAvailable(0, List.of(dir.resolve("empty"), commands("ip", "tc")));
    }

    @Test
    void requireAvailable_tcMissing_failsNamingIt() throws Exception {
        List<Path> directories = List.of(commands("ip"));

        assertThatThrownBy(() -> Network.requireAvailable(0, directories))
                .hasMessage("network faults (partition, flaky) need the 'tc' command (iproute2) in " + directories);
    }

    @Test
    void searchDirectories_addsSbinAfterThePath() {
        assertThat(Network.searchDirectories("/opt/bin::/usr/bin")).containsExactly(Path.of("/opt/bin"),
                Path.of("/usr/bin"), Path.of("/usr/sbin"), Path.of("/sbin"));
    }

    /** Returns a directory holding an executable file of each of {@code names}. */
    private Path commands(String... names) throws Exception {
        Path directory = Files.createTempDirectory(dir, "bin");
        for (String name : names) {
            assertThat(Files.createFile(directory.resolve(name)).toFile().setExecutable(true)).isTrue();
        }
        return directory;
    }
}
