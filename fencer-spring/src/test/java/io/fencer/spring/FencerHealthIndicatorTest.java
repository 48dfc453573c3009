package io.fencer.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.fencer.testing.FencerTestServer;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.actuate.autoconfigure.health.HealthContributorAutoConfiguration;
import org.springframework.boot.actuate.autoconfigure.health.HealthEndpointAutoConfiguration;
import org.springframework.boot.actuate.health.HealthComponent;
import org.springframework.boot.actuate.health.HealthEndpoint;
import org.springframework.boot.actuate.health.Status;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

/**
 * The {@code fencer} health through Actuator's own health endpoint, against a real server that stops and starts
 * again: UP, DOWN while the server is stopped, UP once it is back.
 */
class FencerHealthIndicatorTest {
    private static final Duration GENEROUS = Duration.ofSeconds(60);

    @TempDir
    static Path directory;
    private static FencerTestServer server;

    private final ApplicationContextRunner contexts = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(FencerAutoConfiguration.class,
                    HealthContributorAutoConfiguration.class, HealthEndpointAutoConfiguration.class));

    @BeforeAll
    static void startServer() {
        server = FencerTestServer.start(directory.resolve("data"));
    }

    @AfterAll
    static void stopServer() {
        server.close();
    }

    @Test
    void health_serverStopsAndComesBack_isUpThenDownThenUp() {
        contexts.withPropertyValues("fencer.endpoints=" + server.endpoint(), "fencer.call-timeout=2s",
                "fencer.session-ttl=5s").run(context -> {
                    HealthEndpoint endpoint = context.getBean(HealthEndpoint.class);

                    HealthComponent up = endpoint.healthForPath("fencer");
                    assertThat(up.getStatus()).isEqualTo(Status.UP);
                    assertThat(details(up)).containsEntry("leader", "reachable").containsEntry("session", "alive")
                            .containsKey("sessionId");

                    server.stop();
                    try {
                        HealthComponent down = endpoint.healthForPath("fencer");
                        assertThat(down.getStatus()).isEqualTo(Status.DOWN);
                        assertThat(details(down)).containsEntry("leader", "unreachable").containsKey("error");
                        assertThat(endpoint.health().getStatus()).as("the application's health")
                                .isEqualTo(Status.DOWN);
                    } finally {
                        server.restart();
                    }

                    await().atMost(GENEROUS).until(() -> endpoint.healthForPath("fencer").getStatus(),
                            Status.UP::equals);
                    assertThat(details(endpoint.healthForPath("fencer"))).containsEntry("session", "alive");
                });
    }

    @Test
    void health_disabledByProperty_isNotContributed() {
        contexts.withPropertyValues("fencer.endpoints=" + server.endpoint(), "management.health.fencer.enabled=false")
                .run(context -> {
                    assertThat(context).doesNotHaveBean("fencerHealthIndicator");
                    assertThat(context.getBean(HealthEndpoint.class).healthForPath("fencer")).isNull();
                });
    }

    private static java.util.Map<String, Object> details(HealthComponent component) {
        return ((org.springframework.boot.actuate.health.Health) component).getDetails();
    }
}
