package io.fencer.spring;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.client.FencerClient;
import io.fencer.spring.integration.FencerLockRegistry;
import io.fencer.spring.shedlock.FencerLockProvider;
import io.fencer.testing.FencerTestServer;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;
import net.javacrumbs.shedlock.core.ClockProvider;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * The Micrometer meters of the auto-configuration, counted by the real lock provider and registry on a real server.
 * The lease-loss and stale-refusal counts are asserted where those faults are made: LeaseLossInJobTest and
 * TwoNodeSchedulerLockTest.
 */
class FencerMetricsTest {
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
    void meters_withARegistry_startAtZeroAndCountAcquireOutcomes() {
        contexts.withPropertyValues("fencer.endpoints=" + server.endpoint(), "fencer.session-ttl=5s")
                .withBean(MeterRegistry.class, SimpleMeterRegistry::new)
                .run(context -> {
                    MeterRegistry meters = context.getBean(MeterRegistry.class);
                    assertThat(count(meters, "fencer.acquires", "shedlock", "busy")).isZero();
                    assertThat(meters.get("fencer.lease.losses").tag("component", "lock-registry").counter().count())
                            .isZero();
                    assertThat(meters.get("fencer.stale.refusals").counter().count()).isZero();

                    LockConfiguration job = new LockConfiguration(ClockProvider.now(), "metered-job",
                            Duration.ofSeconds(10), Duration.ZERO);
                    SimpleLock held = context.getBean(FencerLockProvider.class).lock(job).orElseThrow();
                    assertThat(context.getBean(FencerLockProvider.class).lock(job)).isEmpty();
                    held.unlock();
                    FencerLockRegistry registry = context.getBean(FencerLockRegistry.class);
                    Lock lock = registry.obtain("metered-key");
                    lock.lock();
                    try (FencerLockRegistry other = new FencerLockRegistry(context.getBean(FencerClient.class),
                            Duration.ofSeconds(5))) {
                        assertThat(other.obtain("metered-key").tryLock(100, TimeUnit.MILLISECONDS)).isFalse();
                    }
                    lock.unlock();

                    assertThat(count(meters, "fencer.acquires", "shedlock", "acquired")).isEqualTo(1);
                    assertThat(count(meters, "fencer.acquires", "shedlock", "busy")).isEqualTo(1);
                    assertThat(count(meters, "fencer.acquires", "lock-registry", "acquired")).isEqualTo(1);
                });
    }

    @Test
    void metrics_withoutARegistry_recordNothing() {
        contexts.withPropertyValues("fencer.endpoints=" + server.endpoint())
                .run(context -> assertThat(context.getBean(FencerMetrics.class)).isSameAs(FencerMetrics.NONE));
    }

    private static double count(MeterRegistry meters, String name, String component, String outcome) {
        return meters.get(name).tag("component", component).tag("outcome", outcome).counter().count();
    }
}
