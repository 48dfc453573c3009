package io.fencer.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.Session;
import io.fencer.core.PermissionDeniedException;
import io.fencer.core.UnavailableException;
import io.fencer.spring.shedlock.FencerLockProvider;
import io.fencer.server.tls.CertificateAuthority;
import io.fencer.testing.FencerTestServer;
import io.fencer.testing.TestTls;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.actuate.health.Health;
import org.springframework.boot.actuate.health.HealthIndicator;
import org.springframework.boot.actuate.health.Status;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * The {@code fencer.tls.*} properties against a real TLS server that requires client certificates: the client the
 * auto-configuration builds connects with the right CA and certificate (the server knows it by the certificate's
 * CN), and fails with a CA that did not issue the server's certificate.
 */
class FencerTlsTest {

    @TempDir
    static Path directory;
    private static Path certs;
    private static FencerTestServer server;

    private final ApplicationContextRunner contexts = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(FencerAutoConfiguration.class));

    @BeforeAll
    static void startTlsServer() throws IOException {
        certs = Files.createDirectories(directory.resolve("certs"));
        TestTls tls = TestTls.create(certs); // ca.pem, server.pem and server-key.pem
        for (String client : List.of("billing", "scheduler", "dashboard")) {
            tls.write(client, tls.client(client));
        }
        Path acl = Files.writeString(directory.resolve("acl.txt"), String.join("\n",
                "billing lock tls-", "billing read tls-", "scheduler lock jobs/", "dashboard read *", ""));
        CertificateAuthority other = CertificateAuthority.create("another CA", TestTls.VALIDITY);
        other.ca().write(certs.resolve("other-ca.pem"), certs.resolve("other-ca-key.pem"), false);
        server = FencerTestServer.builder(directory.resolve("data")).tls(tls.serverFiles(true)).acl(acl).start();
    }

    @AfterAll
    static void stopServer() {
        server.close();
    }

    @Test
    void tlsProperties_withTheServersCaAndAClientCertificate_connectAsTheCertificatesName() {
        contexts.withPropertyValues("fencer.endpoints=" + server.endpoint(),
                "fencer.tls.ca=" + certs.resolve("ca.pem"), "fencer.tls.certificate=" + certs.resolve("billing.pem"),
                "fencer.tls.key=" + certs.resolve("billing-key.pem")).run(context -> {
                    FencerClient client = context.getBean(FencerClient.class);
                    try (Session session = client.openSession(Duration.ofSeconds(10));
                         Grant grant = session.lock("tls-invoices").acquire(Duration.ofSeconds(30))) {
                        assertThat(client.describe("tls-invoices").holder()).isEqualTo(grant.token());
                        assertThat(client.describe("tls-invoices").holderIdentity())
                                .as("the server knows the client by its certificate").isEqualTo("billing");
                    }
                });
    }

    @Test
    void tlsProperties_withAnotherCa_failToConnect() {
        contexts.withPropertyValues("fencer.endpoints=" + server.endpoint(), "fencer.call-timeout=2s",
                "fencer.tls.ca=" + certs.resolve("other-ca.pem"),
                "fencer.tls.certificate=" + certs.resolve("billing.pem"),
                "fencer.tls.key=" + certs.resolve("billing-key.pem")).run(context -> {
                    Throwable failure = catchThrowable(() -> context.getBean(FencerClient.class).describe("tls-x"));
                    assertThat(failure).isInstanceOf(UnavailableException.class);
                });
    }

    @Test
    void lockProviderAndHealth_ofAnIdentityGrantedLockOnly_workWithoutReadingLockStatus() {
        // Regression: the provider's status read before opening a session (and the health check's) needs read;
        // an ACL granting a scheduler lock alone made every job fail with PERMISSION_DENIED.
        contexts.withPropertyValues("fencer.endpoints=" + server.endpoint(),
                "fencer.tls.ca=" + certs.resolve("ca.pem"), "fencer.tls.certificate=" + certs.resolve("scheduler.pem"),
                "fencer.tls.key=" + certs.resolve("scheduler-key.pem")).run(context -> {
                    FencerClient client = context.getBean(FencerClient.class);
                    assertThat(catchThrowable(() -> client.describe("jobs/nightly")))
                            .as("the control: this identity may not read")
                            .isInstanceOf(PermissionDeniedException.class);
                    LockConfiguration job = new LockConfiguration(ClockProvider.now(), "jobs/nightly",
                            Duration.ofSeconds(10), Duration.ZERO);

                    SimpleLock held = context.getBean(FencerLockProvider.class).lock(job).orElseThrow();
                    held.unlock();

                    HealthIndicator health = context.getBean("fencerHealthIndicator", HealthIndicator.class);
                    assertThat(health.health().getStatus()).isEqualTo(Status.UP);
                });
    }

    @Test
    void health_ofAnIdentityThatMayNotOpenSessions_isDownWithTheLeaderReachable() {
        contexts.withPropertyValues("fencer.endpoints=" + server.endpoint(),
                "fencer.tls.ca=" + certs.resolve("ca.pem"), "fencer.tls.certificate=" + certs.resolve("dashboard.pem"),
                "fencer.tls.key=" + certs.resolve("dashboard-key.pem")).run(context -> {
                    assertThat(context.getBean(FencerClient.class).describe("jobs/nightly").holder())
                            .as("the control: the leader answers this identity").isNull();

                    Health health = context.getBean("fencerHealthIndicator", HealthIndicator.class).health();

                    assertThat(health.getStatus()).isEqualTo(Status.DOWN);
                    assertThat(health.getDetails()).containsEntry("leader", "reachable")
                            .containsEntry("session", "cannot be opened");
                    assertThat(health.getDetails().get("error").toString()).contains("PermissionDenied");
                });
    }

    @Test
    void noTlsProperties_againstTheTlsServer_failToConnect() {
        // The control: the properties are what made the first test connect.
        contexts.withPropertyValues("fencer.endpoints=" + server.endpoint(), "fencer.call-timeout=2s")
                .run(context -> {
                    Throwable failure = catchThrowable(() -> context.getBean(FencerClient.class).describe("tls-x"));
                    assertThat(failure).isInstanceOf(UnavailableException.class);
                });
    }
}
