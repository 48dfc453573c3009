package io.fencer.cli.exec;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * SIGHUP's ACL reload in a real JVM process started with SIGHUP ignored, as {@code nohup} starts it: the JVM keeps
 * ignoring the signal, so {@link HangupSignals#install} must say it installed nothing (found when a test run under
 * {@code nohup} waited 30 s for a reload that never came). The control starts the same process normally.
 */
class HangupSignalsTest {
    @Test
    void install_inAProcessStartedWithSighupIgnored_returnsFalse() throws Exception {
        assertThat(probe(true)).isEqualTo("installed=false");
    }

    @Test
    void install_inAProcessStartedNormally_returnsTrue() throws Exception {
        assertThat(probe(false)).isEqualTo("installed=true");
    }

    /** Runs {@link Probe} in a new JVM, with SIGHUP ignored from the start (the shell's {@code trap ''}) or not. */
    private static String probe(boolean ignoreHangup) throws Exception {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        String command = (ignoreHangup ? "trap '' HUP; " : "") + "exec \"$0\" -cp \"$1\" \"$2\"";
        Process process = new ProcessBuilder(List.of("bash", "-c", command, java,
                System.getProperty("java.class.path"), Probe.class.getName())).redirectErrorStream(true).start();
        assertThat(process.waitFor(60, TimeUnit.SECONDS)).as("the probe ended").isTrue();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        assertThat(process.exitValue()).as(output).isZero();
        return output;
    }

    /** The probe process: installs the reload and prints whether it was installed. */
    static final class Probe {
        private Probe() {}

        public static void main(String[] arguments) {
            System.out.println("installed=" + HangupSignals.install(() -> {}));
        }
    }
}
