package io.fencer.spring.shedlock;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.awaitility.Awaitility.await;

import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.SessionLoss;
import io.fencer.testing.FencerTestServer;
import io.micrometer.core.instrument.MeterRegistry;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import net.javacrumbs.shedlock.spring.annotation.EnableSchedulerLock;
import net.javacrumbs.shedlock.spring.annotation.SchedulerLock;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Import;
import org.springframework.scheduling.annotation.EnableScheduling;
import org.springframework.scheduling.annotation.Scheduled;

/**
 * A lease lost in the middle of a running {@code @SchedulerLock} job reaches the job as {@link FencedJob} documents:
 * the flag it polls turns true and {@link FencedJob#lost()} completes; the job is not interrupted. The loss is real:
 * the server stops, keepalives go unanswered, and the local lease ends.
 */
class LeaseLossInJobTest {
    @TempDir
    static Path directory;
    private static FencerTestServer server;

    @BeforeAll
    static void startServer() {
        server = FencerTestServer.start(directory.resolve("data"));
    }

    @AfterAll
    static void stopServer() {
        server.close();
    }

    @Test
    void leaseLost_midJob_reachesTheJobAsTheFlagItPolls() throws Exception {
        JobState job = new JobState();
        try (ConfigurableApplicationContext context = new SpringApplicationBuilder(JobApplication.class)
                .web(WebApplicationType.NONE)
                .initializers(initialized -> initialized.getBeanFactory().registerSingleton("jobState", job))
                .properties("spring.jmx.enabled=false", "spring.main.banner-mode=off",
                        "fencer.endpoints=" + server.endpoint(), "fencer.call-timeout=2s")
                .run()) {
            assertThat(job.running.await(60, SECONDS)).as("the job started under its lock").isTrue();
            assertThat(job.leaseLostAtStart).as("the control: the lease was held at first").isFalse();

            server.stop();

            assertThat(job.ended.await(60, SECONDS)).as("the job saw its lease lost and stopped").isTrue();
            assertThat(job.stepsAfterStart).as("the job ran steps before the loss").isPositive();
            assertThat(job.interrupted).as("the job's thread was not interrupted").isFalse();
            SessionLoss loss = job.job.lost().toCompletableFuture().get(10, SECONDS);
            assertThat(loss.cause()).isEqualTo(SessionLoss.Cause.UNREACHABLE);
            assertThat(job.job.leaseRemaining()).isEqualTo(Duration.ZERO);
            MeterRegistry meters = context.getBean(MeterRegistry.class);
            await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> assertThat(
                    meters.get("fencer.lease.losses").tag("component", "shedlock").counter().count())
                    .isEqualTo(1.0));
            assertThat(meters.get("fencer.acquires").tag("component", "shedlock").tag("outcome", "acquired")
                    .counter().count()).isEqualTo(1.0);
        } finally {
            if (!server.isRunning()) {
                server.restart();
            }
        }
        try (FencerClient client = Fencer.connect(server.endpoint())) {
            Throwable described = catchThrowable(() -> client.describe("lease-loss-job"));
            assertThat(described).as("the server is back for the other tests").isNull();
        }
    }

    /** What the test sees of the job's one run. */
    static final class JobState {
        final CountDownLatch running = new CountDownLatch(1);
        final CountDownLatch ended = new CountDownLatch(1);
        volatile FencedJob job;
        volatile boolean leaseLostAtStart = true;
        volatile int stepsAfterStart;
        volatile boolean interrupted;
    }

    /** A job that works in steps and polls its lease between them, as FencedJob asks of long jobs. */
    static class LongJob {
        private final JobState state;

        LongJob(JobState state) {
            this.state = state;
        }

        @Scheduled(fixedDelay = 3_600_000)
        @SchedulerLock(name = "lease-loss-job", lockAtMostFor = "PT5S")
        public void run() {
            if (state.job != null) {
                return; // one run is the test
            }
            FencedJob job = FencedJobs.current().orElseThrow();
            state.job = job;
            state.leaseLostAtStart = job.leaseLost();
            state.running.countDown();
            long deadlineNanos = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (!job.leaseLost() && System.nanoTime() - deadlineNanos < 0) {
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10)); // one step of the job's work
                state.stepsAfterStart++;
            }
            state.interrupted = Thread.currentThread().isInterrupted();
            if (job.leaseLost()) {
                state.ended.countDown();
            }
        }
    }

    @SpringBootConfiguration
    @EnableAutoConfiguration(excludeName = {
            "org.springframework.boot.autoconfigure.integration.IntegrationAutoConfiguration",
            "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration"})
    @EnableScheduling
    @EnableSchedulerLock(defaultLockAtMostFor = "PT2S")
    @Import(LongJob.class)
    static class JobApplication {}
}
