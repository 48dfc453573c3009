package io.fencer.spring.shedlock;

import static java.util.concurrent.TimeUnit.SECONDS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.fencer.core.FencingToken;
import io.fencer.core.StaleTokenException;
import io.fencer.spring.FencerClientCustomizer;
import io.fencer.testing.FencerTestServer;
import io.fencer.spring.PausableTicker;
import io.fencer.spring.jdbc.SpringJdbcFence;
import io.fencer.testing.FreePorts;
import io.micrometer.core.instrument.MeterRegistry;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import net.javacrumbs.shedlock.spring.annotation.EnableSchedulerLock;
import net.javacrumbs.shedlock.spring.annotation.SchedulerLock;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.scheduling.annotation.EnableScheduling;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.transaction.annotation.Transactional;

/**
 * The paused-node scenario with everything real: a Fencer server, PostgreSQL, and two Spring Boot application contexts
 * (two "nodes") running the same {@code @Scheduled @SchedulerLock} job, which writes a report row in a
 * {@code @Transactional} method through {@link SpringJdbcFence}.
 *
 * <pre>
 *   A: lock nightly-report#n ..[ paused: no keepalive ]..................... write(#n) REFUSED, rolled back
 *   B:                      A's lease ends -> lock nightly-report#n+1, write(#n+1) committed
 * </pre>
 *
 * Node A's job is held past its lease: it freezes A's client clock (no keepalive falls due, as in a paused process)
 * and waits on a latch, while the service expires A's session on its own clock. The control runs the same scenario
 * with the job writing without the fence: A's stale write lands after B's.
 */
class TwoNodeSchedulerLockTest {
    private static final String INSERT = "INSERT INTO report (node, token) VALUES (?, ?)";

    @TempDir
    static Path directory;
    private static FencerTestServer server;
    private static EmbeddedPostgres postgres;

    @BeforeAll
    static void start() throws IOException {
        server = FencerTestServer.start(directory.resolve("fencer"));
        postgres = EmbeddedPostgres.builder().setDataDirectory(directory.resolve("postgres")).setPort(FreePorts.one())
                .setCleanDataDirectory(true).start();
    }

    @AfterAll
    static void stop() throws IOException {
        if (server != null) {
            server.close();
        }
        if (postgres != null) {
            postgres.close();
        }
    }

    @BeforeEach
    void freshTables() {
        JdbcTemplate jdbc = new JdbcTemplate(postgres.getPostgresDatabase());
        jdbc.execute("DROP TABLE IF EXISTS report");
        jdbc.execute("DROP TABLE IF EXISTS fencer_fence");
        jdbc.execute("CREATE TABLE report (id BIGSERIAL PRIMARY KEY, node TEXT NOT NULL, token BIGINT NOT NULL)");
    }

    @Test
    void pausedNode_withTheFence_hasItsStaleWriteRefusedAndRolledBack() throws Exception {
        Node nodeA = new Node("node-a", true, true);
        Node nodeB = new Node("node-b", true, false);

        try (ConfigurableApplicationContext contextA = start(nodeA)) {
            assertThat(nodeA.paused.await(60, SECONDS)).as("node A's job took the lock and paused").isTrue();
            FencingToken tokenA = nodeA.job.token();
            try (ConfigurableApplicationContext contextB = start(nodeB)) {
                assertThat(nodeB.finished.await(60, SECONDS)).as("node B's job ran once A's lease ended").isTrue();
                FencingToken tokenB = nodeB.job.token();
                assertThat(tokenB.value()).as("B was granted after A").isGreaterThan(tokenA.value());
                assertThat(nodeB.refusal).isNull();
                assertThat(contextB.getBean(MeterRegistry.class).get("fencer.acquires").tag("component", "shedlock")
                        .tag("outcome", "acquired").counter().count()).isPositive();
                assertThat(rows()).containsExactly(new Row("node-b", tokenB.value()));

                nodeA.resume.countDown();
                assertThat(nodeA.finished.await(60, SECONDS)).as("node A's job resumed and ended").isTrue();

                assertThat(nodeA.leaseLostAfterWrite).as("the fault was real: A's lease had ended").isTrue();
                assertThat(nodeA.refusal).as("A's write was refused").isInstanceOf(StaleTokenException.class);
                StaleTokenException refusal = (StaleTokenException) nodeA.refusal;
                assertThat(refusal.scope()).isEqualTo("nightly-report");
                assertThat(refusal.presented()).isEqualTo(tokenA.value());
                assertThat(refusal.accepted()).isEqualTo(tokenB.value());
                assertThat(rows()).as("A's insert, sent with its check, was rolled back")
                        .containsExactly(new Row("node-b", tokenB.value()));
                MeterRegistry metersA = contextA.getBean(MeterRegistry.class);
                assertThat(metersA.get("fencer.stale.refusals").counter().count()).isEqualTo(1.0);
                // Counted by the session's listener, on the client's event thread.
                await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> assertThat(
                        metersA.get("fencer.lease.losses").tag("component", "shedlock").counter().count())
                        .isEqualTo(1.0));
            }
        }
    }

    @Test
    void pausedNode_withoutTheFence_landsItsStaleWriteAfterTheNewerOne() throws Exception {
        // The control: the same nodes, the same pause, the job writing without the fence.
        Node nodeA = new Node("node-a", false, true);
        Node nodeB = new Node("node-b", false, false);

        try (ConfigurableApplicationContext contextA = start(nodeA)) {
            assertThat(nodeA.paused.await(60, SECONDS)).as("node A's job took the lock and paused").isTrue();
            FencingToken tokenA = nodeA.job.token();
            try (ConfigurableApplicationContext contextB = start(nodeB)) {
                assertThat(nodeB.finished.await(60, SECONDS)).as("node B's job ran once A's lease ended").isTrue();
                FencingToken tokenB = nodeB.job.token();
                assertThat(tokenB.value()).isGreaterThan(tokenA.value());

                nodeA.resume.countDown();
                assertThat(nodeA.finished.await(60, SECONDS)).as("node A's job resumed and ended").isTrue();

                assertThat(nodeA.leaseLostAfterWrite).as("the fault was real: A's lease had ended").isTrue();
                assertThat(nodeA.refusal).isNull();
                assertThat(contextA.getBean(MeterRegistry.class).get("fencer.stale.refusals").counter().count())
                        .as("no fence, no refusal").isZero();
                assertThat(contextB.getBean(MeterRegistry.class).get("fencer.acquires").tag("component", "shedlock")
                        .tag("outcome", "acquired").counter().count()).isPositive();
                assertThat(rows()).as("A's stale write landed after B's").containsExactly(
                        new Row("node-b", tokenB.value()), new Row("node-a", tokenA.value()));
            }
        }
    }

    private static ConfigurableApplicationContext start(Node node) {
        return new SpringApplicationBuilder(NodeApplication.class).web(WebApplicationType.NONE)
                .initializers(context -> context.getBeanFactory().registerSingleton("node", node))
                .properties("spring.application.name=" + node.name, "spring.jmx.enabled=false",
                        "spring.main.banner-mode=off",
                        "spring.datasource.url=" + postgres.getJdbcUrl("postgres", "postgres"),
                        "fencer.endpoints=" + server.endpoint(), "fencer.jdbc.create-table=true")
                .run();
    }

    private static List<Row> rows() {
        return new JdbcTemplate(postgres.getPostgresDatabase()).query("SELECT node, token FROM report ORDER BY id",
                (result, index) -> new Row(result.getString(1), result.getLong(2)));
    }

    record Row(String node, long token) {}

    /** What the test knows of one node and how it steers its job. */
    static final class Node {
        final String name;
        final boolean fenced;
        final boolean pauseInJob;
        final PausableTicker ticker = new PausableTicker();
        final CountDownLatch paused = new CountDownLatch(1);
        final CountDownLatch resume = new CountDownLatch(1);
        final CountDownLatch finished = new CountDownLatch(1);
        final AtomicBoolean done = new AtomicBoolean();
        volatile FencedJob job;
        volatile RuntimeException refusal;
        volatile boolean leaseLostAfterWrite;

        Node(String name, boolean fenced, boolean pauseInJob) {
            this.name = name;
            this.fenced = fenced;
            this.pauseInJob = pauseInJob;
        }

        /** The job's body: one report per node, written after a pause on node A. */
        void runJob(ReportWriter writer) throws InterruptedException {
            if (done.get()) {
                return; // later runs on the node have nothing left to write
            }
            FencedJob current = FencedJobs.current().orElseThrow();
            job = current;
            try {
                if (pauseInJob) {
                    ticker.pause(); // the process stops: no keepalive falls due
                    paused.countDown();
                    if (!resume.await(120, SECONDS)) {
                        throw new IllegalStateException("the test never resumed " + name);
                    }
                    ticker.resume(); // it wakes up, and writes before looking at its lease
                }
                writer.write(name, FencedJobs.currentToken(), fenced);
            } catch (StaleTokenException e) {
                refusal = e;
            } finally {
                leaseLostAfterWrite = current.leaseLost();
                done.set(true);
                finished.countDown();
            }
        }
    }

    /** One node: the scheduled job, its transactional writer, and the node's client clock. */
    @SpringBootConfiguration
    @EnableAutoConfiguration(
            excludeName = "org.springframework.boot.autoconfigure.integration.IntegrationAutoConfiguration")
    @EnableScheduling
    @EnableSchedulerLock(defaultLockAtMostFor = "PT2S")
    @Import({ReportJob.class, ReportWriter.class})
    static class NodeApplication {
        @Bean
        FencerClientCustomizer nodeClock(Node node) {
            return builder -> builder.ticker(node.ticker);
        }
    }

    /** The job both nodes run; ShedLock lets one node at a time in. */
    static class ReportJob {
        private final Node node;
        private final ReportWriter writer;

        ReportJob(Node node, ReportWriter writer) {
            this.node = node;
            this.writer = writer;
        }

        @Scheduled(fixedDelay = 100)
        @SchedulerLock(name = "nightly-report", lockAtMostFor = "PT2S")
        public void nightlyReport() throws InterruptedException {
            node.runJob(writer);
        }
    }

    /** The job's write, in a transaction of its own whose first statement the fence checks. */
    static class ReportWriter {
        private final SpringJdbcFence fence;
        private final JdbcTemplate jdbc;

        ReportWriter(SpringJdbcFence fence, JdbcTemplate jdbc) {
            this.fence = fence;
            this.jdbc = jdbc;
        }

        @Transactional
        public void write(String node, FencingToken token, boolean fenced) {
            if (fenced) {
                // The check and the insert go in one round trip; a refusal rolls the insert back.
                fence.executeUpdate(token, INSERT, node, token.value());
            } else {
                jdbc.update(INSERT, node, token.value());
            }
        }
    }
}
