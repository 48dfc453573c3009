package io.fencer.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A JVM killed with SIGKILL leaves no copy of RocksDB's native library behind when it loaded it as the store does,
 * and the next JVM maps the same copy; the control, RocksDB's own loader, leaves one copy per killed JVM.
 */
class RocksLibraryProcessTest {
    @TempDir
    Path tmp;

    @Test
    void load_inJvmsKilledWithSigkill_leavesOneSharedCopyWhereRocksDbsOwnLoaderLeavesOneEach() throws Exception {
        List<Path> control = List.of(loadAndKill("rocksdb"), loadAndKill("rocksdb"));
        assertThat(control).as("the control maps a copy of its own in java.io.tmpdir")
                .allSatisfy(mapped -> assertThat(mapped.getParent()).isEqualTo(tmp)).doesNotHaveDuplicates();
        assertThat(copiesInTmp()).as("RocksDB's own loader leaves its copy behind when killed")
                .containsExactlyInAnyOrderElementsOf(control);

        Path first = loadAndKill("fencer");
        Object firstFile = Files.readAttributes(first, "unix:ino").get("ino");
        Path second = loadAndKill("fencer");
        assertThat(second).as("the second JVM maps the first one's copy").isEqualTo(first);
        assertThat(Files.readAttributes(second, "unix:ino").get("ino")).as("not rewritten").isEqualTo(firstFile);
        assertThat(first).startsWith(tmp.resolve("fencer-native-" + new com.sun.security.auth.module.UnixSystem()
                .getUid()));
        assertThat(copiesInTmp()).as("no copy of a JVM of its own").containsExactlyInAnyOrderElementsOf(control);
        try (Stream<Path> files = Files.walk(first.getParent().getParent())) {
            assertThat(files.filter(Files::isRegularFile)).as("one copy, no temporary file").containsExactly(first);
        }
    }

    /** Starts a JVM that loads the library with {@code loader}, kills it with SIGKILL once loaded, and returns the
     *  file it had mapped. */
    private Path loadAndKill(String loader) throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        ProcessBuilder builder = new ProcessBuilder(java, "-Xmx64m", "-Djava.io.tmpdir=" + tmp,
                "-cp", System.getProperty("java.class.path"), LoadLibraryMain.class.getName(), loader);
        builder.redirectError(tmp.resolve("child-" + loader + ".err").toFile());
        Process child = builder.start();
        try {
            List<String> mapped = new ArrayList<>();
            BufferedReader lines = new BufferedReader(new InputStreamReader(child.getInputStream(),
                    StandardCharsets.UTF_8));
            for (String line = lines.readLine(); line != null && !line.equals("READY"); line = lines.readLine()) {
                if (line.startsWith("MAPPED ")) {
                    mapped.add(line.substring("MAPPED ".length()));
                }
            }
            assertThat(child.isAlive()).as("loaded and waiting; see " + tmp.resolve("child-" + loader + ".err"))
                    .isTrue();
            assertThat(mapped).as("the library the child mapped").hasSize(1);
            child.destroyForcibly(); // SIGKILL on Linux: no shutdown hook, no deleteOnExit
            assertThat(child.waitFor(60, TimeUnit.SECONDS)).isTrue();
            assertThat(child.exitValue()).as("killed by signal 9").isEqualTo(128 + 9);
            return Path.of(mapped.get(0));
        } finally {
            child.destroyForcibly();
        }
    }

    private List<Path> copiesInTmp() throws IOException {
        try (Stream<Path> files = Files.list(tmp)) {
            return files.filter(file -> file.getFileName().toString().startsWith("librocksdbjni")).toList();
        }
    }
}
