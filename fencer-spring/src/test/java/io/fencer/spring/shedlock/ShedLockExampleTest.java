package io.fencer.spring.shedlock;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.testing.FencerTestServer;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.SpringApplication;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.core.io.DefaultResourceLoader;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The example application of fencer-spring's README (examples/shedlock) is what the README shows, and it runs: its
 * sources are compiled here against this module, started as a Spring Boot application against a real server, and
 * its job run once through ShedLock's proxy writes its report under the grant's token. Its pom is built as a module
 * of the soak tier's build (the root pom's soak profile), against this module and Spring Boot's BOM.
 */
class ShedLockExampleTest {
    private static final Path EXAMPLE = Path.of(System.getProperty("user.dir")).toAbsolutePath()
            .resolveSibling("examples").resolve("shedlock");

    @TempDir
    Path dir;

    @Test
    void readme_showsEveryFileOfTheExampleAsItIs() throws IOException {
        String readme = Files.readString(EXAMPLE.resolve("../../fencer-spring/README.md").normalize());
        List<Path> files = files();
        assertThat(files).as("the control: the example's files").hasSize(5);

        for (Path file : files) {
            assertThat(readme).as("fencer-spring/README.md shows %s as it is", EXAMPLE.relativize(file))
                    .contains(Files.readString(file));
        }
        String pom = Files.readString(EXAMPLE.resolve("pom.xml"));
        for (String artifact : List.of("fencer-spring", "shedlock-spring", "spring-boot-starter-jdbc", "h2",
                "spring-boot-dependencies")) {
            assertThat(pom).contains("<artifactId>" + artifact + "</artifactId>");
            assertThat(readme).as("the README names %s", artifact).contains(artifact);
        }
    }

    @Test
    void exampleApplication_jobRunOnce_writesItsReportUnderTheGrantsToken() throws Exception {
        ClassLoader example = compile();
        try (FencerTestServer server = FencerTestServer.start(dir.resolve("data"))) {
            Class<?> application = example.loadClass("example.NightlyReportApplication");
            SpringApplication spring = new SpringApplication(new DefaultResourceLoader(example), application);
            Thread.currentThread().setContextClassLoader(example);
            try (ConfigurableApplicationContext context = spring.run("--fencer.endpoints=" + server.endpoint(),
                    "--spring.datasource.url=jdbc:h2:mem:example-" + System.nanoTime() + ";DB_CLOSE_DELAY=-1",
                    "--spring.autoconfigure.exclude="
                            + "org.springframework.boot.autoconfigure.integration.IntegrationAutoConfiguration")) {
                Object job = context.getBean(example.loadClass("example.NightlyReport"));
                Method run = job.getClass().getMethod("run");

                run.invoke(job); // through ShedLock's proxy, as the scheduler calls it

                JdbcTemplate jdbc = context.getBean(JdbcTemplate.class);
                assertThat(jdbc.queryForObject("SELECT total FROM report", Long.class)).isEqualTo(42);
                assertThat(jdbc.queryForObject("SELECT token FROM fencer_fence WHERE scope = 'nightly-report'",
                        Long.class)).as("the grant's token, accepted by the fence").isEqualTo(1);
            } finally {
                Thread.currentThread().setContextClassLoader(getClass().getClassLoader());
            }
        }
    }

    private static List<Path> files() throws IOException {
        List<Path> files = new ArrayList<>();
        try (Stream<Path> walk = Files.walk(EXAMPLE.resolve("src"))) {
            walk.filter(Files::isRegularFile).sorted().forEach(files::add);
        }
        return files;
    }

    /** Compiles the example's sources against this module's class path; returns a loader of them and its resources. */
    private ClassLoader compile() throws IOException {
        Path classes = dir.resolve("classes");
        Files.createDirectories(classes);
        List<String> arguments = new ArrayList<>(List.of("-d", classes.toString(), "-cp",
                System.getProperty("java.class.path"), "-proc:none"));
        for (Path file : files()) {
            if (file.toString().endsWith(".java")) {
                arguments.add(file.toString());
            }
        }
        JavaCompiler compiler = ToolProvider.getSystemJavaCompiler();
        ByteArrayOutputStream diagnostics = new ByteArrayOutputStream();
        int status = compiler.run(null, null, new PrintStream(diagnostics, true, StandardCharsets.UTF_8),
                arguments.toArray(String[]::new));
        assertThat(status).as("the example does not compile:%n%s", diagnostics.toString(StandardCharsets.UTF_8))
                .isZero();
        return new URLClassLoader(new URL[] {classes.toUri().toURL(),
            EXAMPLE.resolve("src/main/resources").toUri().toURL()}, getClass().getClassLoader());
    }
}
