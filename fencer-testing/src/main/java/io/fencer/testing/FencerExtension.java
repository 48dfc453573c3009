package io.fencer.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Objects;
import java.util.function.Function;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A JUnit 5 extension running a {@link FencerTestServer} or a {@link FencerTestCluster} for a test class, with its
 * data in a temporary directory it deletes afterwards.
 *
 * <pre>{@code
 * class OrderServiceTest {
 *     @RegisterExtension
 *     static FencerExtension fencer = FencerExtension.server();
 *
 *     @Test
 *     void placeOrder_underTheLock_writesOnce() {
 *         try (FencerClient client = Fencer.connect(fencer.endpoints())) { ... }
 *     }
 * }
 * }</pre>
 *
 * <p>In a {@code static} field it starts before the class's first test and stops after its last (and after its
 * {@code @Nested} classes, which share it); in an instance field it starts and stops around each test. JUnit 5's
 * {@code junit-jupiter-api} must be on the test class path (this module does not bring it).
 */
public final class FencerExtension implements BeforeAllCallback, AfterAllCallback, BeforeEachCallback,
        AfterEachCallback {
    private final Function<Path, AutoCloseable> starter;
    private AutoCloseable running;
    private Path dataRoot;
    /** The context that started it: only that context's end stops it (a nested class's end does not). */
    private ExtensionContext owner;

    private FencerExtension(Function<Path, AutoCloseable> starter) {
        this.starter = starter;
    }

    /** Returns an extension running one plaintext server ({@link FencerTestServer#start(Path)}). */
    public static FencerExtension server() {
        return server(FencerTestServer.Builder::start);
    }

    /**
     * Returns an extension running the server that {@code settings} starts from a builder, e.g.
     * {@code FencerExtension.server(builder -> builder.ticker(ticker).start())}.
     */
    public static FencerExtension server(Function<FencerTestServer.Builder, FencerTestServer> settings) {
        Objects.requireNonNull(settings, "settings");
        return new FencerExtension(dataRoot -> settings.apply(FencerTestServer.builder(dataRoot)));
    }

    /** Returns an extension running a group of {@code peers} plaintext peers ({@link FencerTestCluster}). */
    public static FencerExtension cluster(int peers) {
        FencerTestCluster.checkPeers(peers); // now, not in the first test
        return new FencerExtension(dataRoot -> FencerTestCluster.start(dataRoot, peers));
    }

    /**
     * Returns the running server.
     *
     * @throws IllegalStateException outside the tests, or when this extension runs a cluster
     */
    public synchronized FencerTestServer testServer() {
        if (running instanceof FencerTestServer server) {
            return server;
        }
        throw new IllegalStateException("no Fencer test server runs here: " + describe());
    }

    /**
     * Returns the running cluster.
     *
     * @throws IllegalStateException outside the tests, or when this extension runs a single server
     */
    public synchronized FencerTestCluster testCluster() {
        if (running instanceof FencerTestCluster cluster) {
            return cluster;
        }
        throw new IllegalStateException("no Fencer test cluster runs here: " + describe());
    }

    /** Returns the client's endpoints: the server's address, or every peer's, comma-separated. */
    public synchronized String endpoints() {
        if (running instanceof FencerTestServer server) {
            return server.endpoint();
        }
        return testCluster().endpoints();
    }

    /** Returns the temporary directory of the running server's data, or null outside the tests; for this module's tests. */
    synchronized Path dataRoot() {
        return dataRoot;
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        startFor(context);
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        startFor(context); // in an instance field, JUnit calls no beforeAll
    }

    @Override
    public void afterEach(ExtensionContext context) {
        stopFor(context);
    }

    @Override
    public void afterAll(ExtensionContext context) {
        stopFor(context);
    }

    private synchronized void startFor(ExtensionContext context) {
        if (running != null) {
            return;
        }
        try {
            dataRoot = Files.createTempDirectory("fencer-test-");
        } catch (IOException e) {
            throw new UncheckedIOException("no temporary directory for the Fencer test server's data", e);
        }
        try {
            running = starter.apply(dataRoot);
        } catch (RuntimeException e) {
            deleteDataRoot();
            throw e;
        }
        owner = context;
    }

    private synchronized void stopFor(ExtensionContext context) {
        if (running == null || owner != context) {
            return;
        }
        try {
            running.close();
        } catch (Exception e) {
            throw new IllegalStateException("the Fencer test server did not stop cleanly", e);
        } finally {
            running = null;
            owner = null;
            deleteDataRoot();
        }
    }

    private String describe() {
        return running == null ? "it runs only during the tests of the class that registers it" : running.toString();
    }

    private void deleteDataRoot() {
        Path root = dataRoot;
        dataRoot = null;
        if (root == null || !Files.exists(root)) {
            return;
        }
        try {
            Files.walkFileTree(root, new SimpleFileVisitor<>() {
                @Override
                public FileVisitResult visitFile(Path file, BasicFileAttributes attributes) throws IOException {
                    Files.delete(file);
                    return FileVisitResult.CONTINUE;
                }

                @Override
                public FileVisitResult postVisitDirectory(Path directory, IOException error) throws IOException {
                    if (error != null) {
                        throw error;
                    }
                    Files.delete(directory);
                    return FileVisitResult.CONTINUE;
                }
            });
        } catch (IOException e) {
            throw new UncheckedIOException("the Fencer test data in " + root + " was not deleted", e);
        }
    }
}
