package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** The class-data archive the process tests' children map: made, and actually used. */
class ChildJvmTest {
    private static final String MAIN_LOADED = "io.fencer.cli.Main source: ";

    @Test
    void options_afterTraining_childLoadsItsClassesFromTheArchive() throws Exception {
        assertThat(ChildJvm.archive()).as("the archive (see this JVM's standard error if absent)").isPresent();

        String withArchive = classLoads(ChildJvm.options());
        String without = classLoads(ChildJvm.QUICK_START); // the control: the same command reads the jars

        assertThat(withArchive).contains(MAIN_LOADED + "shared objects file");
        assertThat(without).contains(MAIN_LOADED).doesNotContain(MAIN_LOADED + "shared objects file");
    }

    /** Runs {@code fencer --version} with {@code options}, logging each class loaded and where from. */
    private static String classLoads(List<String> options) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of(ChildJvm.java()));
        command.addAll(options);
        command.addAll(List.of("-Xlog:class+load=info:stdout", "-cp", ChildJvm.classPath(),
                "io.fencer.cli.Main", "--version"));
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        byte[] output = process.getInputStream().readAllBytes();
        assertThat(process.waitFor(60, TimeUnit.SECONDS)).as("fencer --version ended").isTrue();
        assertThat(process.exitValue()).as("fencer --version's status").isZero();
        return new String(output, StandardCharsets.UTF_8);
    }
}
