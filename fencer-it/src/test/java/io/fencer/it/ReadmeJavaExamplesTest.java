package io.fencer.it;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.client.FencedStore;
import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.testing.FencerTestServer;
import java.io.StringWriter;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Java snippets of the README's quick start and of docs/client.md compile and run as written, against a real
 * server in this JVM: each is put in a method body with the imports its text names, its address moved to the
 * server's. A snippet that stops compiling or running breaks the build.
 */
class ReadmeJavaExamplesTest {
    private static final String IMPORTS = "import io.fencer.client.*;\nimport io.fencer.core.*;\n"
            + "import java.time.Duration;\nimport static java.lang.System.Logger.Level.WARNING;\n";

    @TempDir
    static Path dir;
    private static FencerTestServer server;

    @BeforeAll
    static void startServer() {
        server = FencerTestServer.start(dir.resolve("data"));
    }

    @AfterAll
    static void stopServer() {
        if (server != null) {
            server.close();
        }
    }

    @Test
    void javaQuickStart_compilesAndPutsTheTotal() throws Exception {
        List<String> blocks = Readme.blocks("Quick start: Java", "java");
        assertThat(blocks).hasSize(1);

        run("QuickStart", blocks.get(0));

        try (FencerClient fencer = Fencer.connect(server.endpoint());
             FencedStore store = Fencer.store(server.endpoint(), fencer)) {
            assertThat(store.get("orders", "total").valueUtf8()).as("what the snippet wrote").isEqualTo("42");
        }
    }

    @Test
    void clientGuideLocksAndSessions_runsAndItsLossHandlerStaysSilentOnClose() throws Exception {
        String guide = Files.readString(Path.of(System.getProperty("user.dir")).toAbsolutePath()
                .resolveSibling("docs").resolve("client.md"), StandardCharsets.UTF_8);
        String section = guide.substring(guide.indexOf("## Locks and sessions"));
        int start = section.indexOf("```java\n") + "```java\n".length();
        String block = section.substring(start, section.indexOf("\n```", start) + 1);
        List<LogRecord> warnings = new CopyOnWriteArrayList<>();
        Logger orders = Logger.getLogger("orders");
        Handler handler = new Handler() {
            @Override
            public void publish(LogRecord record) {
                warnings.add(record);
            }

            @Override
            public void flush() {}

            @Override
            public void close() {}
        };
        orders.addHandler(handler);
        try {
            run("ClientGuide", block);
            FencerProcess.pause(500); // loss listeners run on the client's event threads
        } finally {
            orders.removeHandler(handler);
        }

        assertThat(block).as("the control: the snippet has a loss handler").contains("session.lost()");
        assertThat(warnings).as("the snippet closed its session: no loss to report").isEmpty();
    }

    /** Compiles {@code snippet} as the body of {@code name.run()} and runs it. */
    private static void run(String name, String snippet) throws Exception {
        String body = snippet.replace("127.0.0.1:7070", server.endpoint());
        String source = IMPORTS + "public class " + name + " {\n    public static void run() throws Exception {\n"
                + body + "\n    }\n}\n";
        Path sources = dir.resolve(name + "-src");
        Path classes = dir.resolve(name + "-classes");
        Files.createDirectories(sources);
        Files.createDirectories(classes);
        Path file = sources.resolve(name + ".java");
        Files.writeString(file, source);
        JavaCompiler compiler = ToolProvider.getSystemJavaCompiler();
        StringWriter diagnostics = new StringWriter();
        int status = compiler.run(null, null, new java.io.PrintStream(new java.io.OutputStream() {
            @Override
            public void write(int b) {
                diagnostics.write(b);
            }
        }, true), "-d", classes.toString(), "-cp", System.getProperty("java.class.path"), file.toString());
        assertThat(status).as("%s does not compile:%n%s%n%s", name, diagnostics, source).isZero();
        try (URLClassLoader loader = new URLClassLoader(new URL[] {classes.toUri().toURL()},
                ReadmeJavaExamplesTest.class.getClassLoader())) {
            Method run = loader.loadClass(name).getMethod("run");
            run.invoke(null);
        }
    }
}
