package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Assumptions;

/**
 * An ext4 file system on a loop device, mounted under a test's directory, that the test can freeze
 * ({@code fsfreeze}): with the log unable to take a write, an entry stays in flight and what follows waits in the
 * peer's queue. Needs root (CI runs as root): elsewhere {@link #mount} aborts the test, loudly; as root a failure to
 * mount fails it. {@link #close} thaws and unmounts whatever happened.
 */
final class LoopFileSystem implements AutoCloseable {
    private final Path mount;

    private LoopFileSystem(Path mount) {
        this.mount = mount;
    }

    /** Mounts a fresh 128 MiB ext4 file system at {@code dir/loop}, its image in {@code dir}; {@code test} names it. */
    static LoopFileSystem mount(Path dir, String test) throws Exception {
        Path image = dir.resolve("fs.img");
        Path mount = Files.createDirectories(dir.resolve("loop"));
        try (var file = new java.io.RandomAccessFile(image.toFile(), "rw")) {
            file.setLength(128L << 20);
        }
        String failure = HostCommands.run("mkfs.ext4", "-q", "-F", image.toString());
        if (failure == null) {
            failure = HostCommands.run("mount", "-o", "loop", image.toString(), mount.toString());
        }
        if (failure != null) {
            System.err.println(test + " SKIPPED: cannot mount a loop file system (needs root): " + failure);
            assertThat(HostCommands.uid()).as("running as root, yet mounting failed: %s", failure)
                    .isNotEqualTo("0");
            Assumptions.abort(test + " needs root to mount a loop file system: " + failure);
        }
        return new LoopFileSystem(mount);
    }

    Path path() {
        return mount;
    }

    /** Freezes the file system: every write to it waits until {@link #thaw}. */
    void freeze() throws Exception {
        assertThat(HostCommands.run("fsfreeze", "-f", mount.toString())).isNull();
    }

    void thaw() throws Exception {
        assertThat(HostCommands.run("fsfreeze", "-u", mount.toString())).isNull();
    }

    /** Thaws, whatever the file system's state: for a test's clean-up. */
    void thawQuietly() throws Exception {
        HostCommands.run("fsfreeze", "-u", mount.toString());
    }

    /**
     * A test's clean-up: thaws {@code loop} (null: never mounted) first, whatever happened, then closes
     * {@code toClose} last first (the processes whose data it holds among them), then unmounts it.
     */
    static void closeAll(LoopFileSystem loop, List<AutoCloseable> toClose) throws Exception {
        if (loop != null) {
            loop.thawQuietly();
        }
        for (int i = toClose.size() - 1; i >= 0; i--) {
            toClose.get(i).close();
        }
        if (loop != null) {
            loop.close();
        }
    }

    /** Thaws (never leave it frozen) and unmounts lazily. */
    @Override
    public void close() throws Exception {
        HostCommands.run("fsfreeze", "-u", mount.toString());
        HostCommands.run("umount", "-l", mount.toString());
    }
}
