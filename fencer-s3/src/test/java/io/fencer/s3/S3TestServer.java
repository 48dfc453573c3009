package io.fencer.s3;

import com.adobe.testing.s3mock.S3MockApplication;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import org.apache.catalina.connector.Connector;
import org.springframework.boot.web.embedded.tomcat.TomcatServletWebServerFactory;
import org.springframework.boot.web.server.WebServerFactoryCustomizer;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.http.apache5.Apache5HttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.S3ClientBuilder;

/**
 * A real S3-compatible server for the tests: Adobe's S3Mock (from Maven Central), a Spring Boot application serving
 * the S3 REST API with conditional writes, in the test's JVM on free ports of 127.0.0.1, storing under a directory of
 * the test's. It starts once per test JVM (a Spring Boot start takes seconds) and every test uses buckets or prefixes
 * of its own.
 *
 * <p>S3Mock checks a put's {@code If-Match} and then stores the object in two steps, not atomically against a
 * simultaneous put of the same key (AWS S3 applies them atomically): the tests order racing requests deterministically
 * rather than rely on that.
 */
final class S3TestServer {
    static final String BUCKET = "fencer-test";
    private static S3TestServer shared;

    private final S3MockApplication app;
    private final String endpoint;

    // S3Mock 4 marks its plain HTTP port for removal in a later major release; its HTTPS port would need a client
    // that trusts S3Mock's self-signed certificate, in the holder processes too.
    @SuppressWarnings("removal")
    private S3TestServer(S3MockApplication app) {
        this.app = app;
        this.endpoint = "http://127.0.0.1:" + app.getHttpPort();
    }

    /** Returns the server of this JVM, starting it on the first call. */
    static synchronized S3TestServer get() {
        if (shared == null) {
            try {
                Path root = Files.createTempDirectory("fencer-s3mock");
                shared = new S3TestServer(S3MockApplication.start(new HashMap<>(Map.of(
                        S3MockApplication.PROP_HTTP_PORT, 0,
                        S3MockApplication.PROP_HTTPS_PORT, 0,
                        "server.address", "127.0.0.1",
                        S3MockApplication.PROP_ROOT_DIRECTORY, root.toString(),
                        S3MockApplication.PROP_INITIAL_BUCKETS, BUCKET,
                        S3MockApplication.PROP_SILENT, true,
                        "spring.main.sources", LoopbackConnectors.class.getName(),
                        "spring.main.banner-mode", "off",
                        "logging.level.root", "WARN"))));
                Runtime.getRuntime().addShutdownHook(new Thread(shared.app::stop, "s3mock-stop"));
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }
        return shared;
    }

    /** The server's plain HTTP endpoint, on 127.0.0.1. */
    String endpoint() {
        return endpoint;
    }

    /** A new client of the server (path-style addressing, test credentials); the caller closes it. */
    S3Client client() {
        return client(endpoint);
    }

    static S3Client client(String endpoint) {
        return client(endpoint, builder -> { });
    }

    /** As {@link #client(String)}, with {@code more} applied to the builder last (an interceptor, say). */
    static S3Client client(String endpoint, java.util.function.Consumer<S3ClientBuilder> more) {
        S3ClientBuilder builder = S3Client.builder()
                .endpointOverride(URI.create(endpoint))
                .forcePathStyle(true)
                .region(Region.US_EAST_1)
                .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create("fencer", "test")))
                .httpClientBuilder(Apache5HttpClient.builder());
        more.accept(builder);
        return builder.build();
    }

    /**
     * Binds every connector of the server to 127.0.0.1: S3Mock adds its plain HTTP connector beside Spring Boot's own
     * without an address, which would listen on every interface.
     */
    public static final class LoopbackConnectors implements WebServerFactoryCustomizer<TomcatServletWebServerFactory> {
        @Override
        public void customize(TomcatServletWebServerFactory factory) {
            for (Connector connector : factory.getAdditionalTomcatConnectors()) {
                connector.setProperty("address", "127.0.0.1");
            }
        }
    }
}
