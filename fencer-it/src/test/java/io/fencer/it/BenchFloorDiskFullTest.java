package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.load.HandoffFloor;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code fencer bench floor} on a file system too small for its 16 MiB log: it fails before measuring, with the
 * disk's error, and leaves no file behind. The control, the same run on a file system with room, measures. Two
 * tmpfs mounts made by the test (CI runs as root; elsewhere the test is skipped, loudly).
 */
class BenchFloorDiskFullTest {
    @TempDir
    Path dir;

    private final List<Path> mounts = new ArrayList<>();

    @AfterEach
    void unmount() throws Exception {
        for (Path mount : mounts) {
            HostCommands.run("umount", "-l", mount.toString());
        }
    }

    @Test
    void run_fileSystemTooSmall_failsWithTheDiskErrorAndLeavesNoFile() throws Exception {
        Path small = mount("small", "4m");
        Path roomy = mount("roomy", "64m");

        HandoffFloor.Result control = HandoffFloor.run(settings(roomy));
        assertThat(control.error()).isNull();
        assertThat(control.handOffs()).as("the control measures").isPositive();

        assertThatThrownBy(() -> HandoffFloor.run(settings(small)))
                .isInstanceOf(IOException.class).hasMessageContaining("No space left on device");
        assertThat(files(small)).as("the partial log is removed").isZero();
        assertThat(files(roomy)).isZero();
    }

    private static HandoffFloor.Settings settings(Path directory) {
        return new HandoffFloor.Settings(2, 0, true, false, directory, Duration.ofMillis(300), Duration.ZERO);
    }

    private Path mount(String name, String size) throws Exception {
        Path mount = Files.createDirectories(dir.resolve(name));
        String failure = HostCommands.run("mount", "-t", "tmpfs", "-o", "size=" + size, "tmpfs", mount.toString());
        if (failure != null) {
            // Only a machine where the test may not mount skips it: CI runs as root, where a failure fails it.
            System.err.println("BenchFloorDiskFullTest SKIPPED: cannot mount a tmpfs (needs root): " + failure);
            assertThat(HostCommands.uid()).as("running as root, yet mounting a tmpfs failed: %s", failure)
                    .isNotEqualTo("0");
            Assumptions.abort("BenchFloorDiskFullTest needs root to mount a small tmpfs: " + failure);
        }
        mounts.add(mount);
        return mount;
    }

    private static long files(Path directory) throws IOException {
        try (Stream<Path> files = Files.list(directory)) {
            return files.count();
        }
    }
}
