package io.fencer.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.Session;
import io.fencer.core.Ticker;
import io.fencer.spring.integration.FencerLockRegistry;
import io.fencer.spring.jdbc.SpringJdbcFence;
import io.fencer.spring.shedlock.FencerLockProvider;
import io.fencer.testing.FencerTestServer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import net.javacrumbs.shedlock.core.LockProvider;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.integration.support.locks.LockRegistry;

/**
 * The auto-configuration in real application contexts against a real server: the {@code fencer.*} properties bind,
 * the client works and is closed with its context, each optional piece appears only with its library, and beans of
 * the application win.
 */
class FencerAutoConfigurationTest {
    @TempDir
    static Path directory;
    private static FencerTestServer server;

    private final ApplicationContextRunner contexts = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(FencerAutoConfiguration.class));

    @BeforeAll
    static void startServer() {
        server = FencerTestServer.start(directory.resolve("data"));
    }

    @AfterAll
    static void stopServer() {
        server.close();
    }

    @Test
    void properties_allSet_bindToTheirValues() {
        new ApplicationContextRunner().withUserConfiguration(PropertiesOnly.class)
                .withPropertyValues("fencer.endpoints=10.0.0.5:7070,10.0.0.6:7070", "fencer.session-ttl=45s",
                "fencer.call-timeout=3s", "fencer.tls.ca=/etc/fencer/ca.pem",
                "fencer.tls.certificate=/etc/fencer/billing.pem", "fencer.tls.key=/etc/fencer/billing-key.pem",
                "fencer.jdbc.dialect=postgresql", "fencer.jdbc.table=billing_fence", "fencer.jdbc.create-table=true")
                .run(context -> {
                    FencerProperties properties = context.getBean(FencerProperties.class);
                    assertThat(properties.endpoints()).containsExactly("10.0.0.5:7070", "10.0.0.6:7070");
                    assertThat(properties.sessionTtl()).isEqualTo(Duration.ofSeconds(45));
                    assertThat(properties.callTimeout()).isEqualTo(Duration.ofSeconds(3));
                    assertThat(properties.tls().ca()).isEqualTo(Path.of("/etc/fencer/ca.pem"));
                    assertThat(properties.tls().certificate()).isEqualTo(Path.of("/etc/fencer/billing.pem"));
                    assertThat(properties.tls().key()).isEqualTo(Path.of("/etc/fencer/billing-key.pem"));
                    assertThat(properties.tls().enabled()).isTrue();
                    assertThat(properties.jdbc().dialect()).isEqualTo(io.fencer.jdbc.Dialect.POSTGRESQL);
                    assertThat(properties.jdbc().table()).isEqualTo("billing_fence");
                    assertThat(properties.jdbc().createTable()).isTrue();
                });
    }

    /** The properties alone: the files named do not exist, so no client could be built from them. */
    @EnableConfigurationProperties(FencerProperties.class)
    static class PropertiesOnly {}

    @Test
    void properties_noneSet_haveTheirDefaults() {
        contexts.run(context -> {
            FencerProperties properties = context.getBean(FencerProperties.class);
            assertThat(properties.endpoints()).containsExactly("127.0.0.1:7070");
            assertThat(properties.sessionTtl()).isEqualTo(Duration.ofSeconds(10));
            assertThat(properties.callTimeout()).isEqualTo(Duration.ofSeconds(10));
            assertThat(properties.tls().enabled()).isFalse();
            assertThat(properties.jdbc().dialect()).isNull();
            assertThat(properties.jdbc().table()).isEqualTo("fencer_fence");
            assertThat(properties.jdbc().createTable()).isFalse();
        });
    }

    @Test
    void sessionTtl_aboveTheLimit_failsTheStartNamingLimitAndValue() {
        contexts.withPropertyValues("fencer.session-ttl=2h").run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure()).rootCause().hasMessageContaining("sessionTtlMax 3600000 ms")
                    .hasMessageContaining("got 7200000 ms");
        });
    }

    @Test
    void tlsCertificate_withoutKey_failsTheStart() {
        contexts.withPropertyValues("fencer.tls.ca=/ca.pem", "fencer.tls.certificate=/billing.pem").run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure()).rootCause()
                    .hasMessageContaining("fencer.tls.certificate and fencer.tls.key go together");
        });
    }

    @Test
    void fencerClient_fromProperties_locksOnTheServerAndClosesWithTheContext() {
        FencerClient[] kept = new FencerClient[1];
        contexts.withPropertyValues("fencer.endpoints=" + server.endpoint()).run(context -> {
            FencerClient client = context.getBean(FencerClient.class);
            kept[0] = client;
            try (Session session = client.openSession(Duration.ofSeconds(5));
                 Grant grant = session.lock("autoconfig-orders").acquire(Duration.ofSeconds(30))) {
                assertThat(grant.token().lock()).isEqualTo("autoconfig-orders");
                assertThat(client.describe("autoconfig-orders").holder()).isEqualTo(grant.token());
            }
        });
        assertThatThrownBy(() -> kept[0].openSession(Duration.ofSeconds(5)))
                .as("the context closed the client").isInstanceOf(IllegalStateException.class);
    }

    @Test
    void fencerClient_withCustomizers_appliesThemToTheBuilder() {
        AtomicInteger readings = new AtomicInteger();
        Ticker counting = () -> {
            readings.incrementAndGet();
            return System.nanoTime();
        };
        contexts.withPropertyValues("fencer.endpoints=" + server.endpoint())
                .withBean(FencerClientCustomizer.class, () -> builder -> builder.ticker(counting))
                .run(context -> {
                    try (Session session = context.getBean(FencerClient.class).openSession(Duration.ofSeconds(5))) {
                        assertThat(session.leaseRemaining()).isPositive();
                    }
                    assertThat(readings).as("the client read the customizer's ticker").hasPositiveValue();
                });
    }

    @Test
    void fencerClient_ofTheApplication_isKeptAndUsedByTheIntegrations() {
        contexts.withBean("applicationClient", FencerClient.class,
                () -> io.fencer.client.Fencer.connect(server.endpoint()),
                definition -> definition.setDestroyMethodName("close"))
                .run(context -> {
                    assertThat(context).hasSingleBean(FencerClient.class);
                    assertThat(context).getBean(FencerClient.class).isSameAs(context.getBean("applicationClient"));
                    assertThat(context).hasSingleBean(FencerLockProvider.class);
                });
    }

    @Test
    void integrations_withTheirLibraries_areConfigured() {
        contexts.withPropertyValues("fencer.endpoints=" + server.endpoint())
                .withBean(DataSource.class, () -> new org.springframework.jdbc.datasource.DriverManagerDataSource(
                        "jdbc:postgresql://127.0.0.1:1/none"))
                .withPropertyValues("fencer.jdbc.dialect=postgresql")
                .run(context -> {
                    assertThat(context).hasSingleBean(FencerLockProvider.class);
                    assertThat(context).getBean(LockProvider.class).isInstanceOf(FencerLockProvider.class);
                    assertThat(context).hasSingleBean(FencerLockRegistry.class);
                    assertThat(context).getBean(LockRegistry.class).isInstanceOf(FencerLockRegistry.class);
                    assertThat(context).hasSingleBean(SpringJdbcFence.class);
                    assertThat(context).hasSingleBean(FencerMetrics.class);
                });
    }

    @Test
    void integrations_withoutTheirLibraries_areLeftOutAndTheContextStarts() {
        contexts.withPropertyValues("fencer.endpoints=" + server.endpoint())
                .withClassLoader(new FilteredClassLoader(LockProvider.class, LockRegistry.class,
                        org.springframework.integration.support.locks.ExpirableLockRegistry.class,
                        org.springframework.jdbc.datasource.DataSourceUtils.class,
                        io.micrometer.core.instrument.MeterRegistry.class,
                        org.springframework.boot.actuate.health.HealthIndicator.class))
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context).hasSingleBean(FencerClient.class);
                    assertThat(context).doesNotHaveBean(FencerLockProvider.class);
                    assertThat(context).doesNotHaveBean(FencerLockRegistry.class);
                    assertThat(context).doesNotHaveBean(SpringJdbcFence.class);
                    assertThat(context).doesNotHaveBean("fencerHealthIndicator");
                });
    }

    @Test
    void lockProvider_ofTheApplication_isKept() {
        LockProvider own = configuration -> java.util.Optional.empty();
        contexts.withPropertyValues("fencer.endpoints=" + server.endpoint())
                .withBean(LockProvider.class, () -> own)
                .run(context -> {
                    assertThat(context).doesNotHaveBean(FencerLockProvider.class);
                    assertThat(context.getBeansOfType(LockProvider.class).values()).containsExactly(own);
                });
    }

}
