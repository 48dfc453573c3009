package io.fencer.spring;

import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.jdbc.JdbcFence;
import io.fencer.spring.integration.FencerLockRegistry;
import io.fencer.spring.jdbc.SpringJdbcFence;
import io.fencer.spring.shedlock.FencerLockProvider;
import io.micrometer.core.instrument.MeterRegistry;
import javax.sql.DataSource;
import net.javacrumbs.shedlock.core.LockProvider;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.actuate.autoconfigure.health.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.actuate.health.HealthIndicator;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.integration.support.locks.ExpirableLockRegistry;
import org.springframework.integration.support.locks.LockRegistry;
import org.springframework.jdbc.datasource.DataSourceUtils;

/**
 * Spring Boot auto-configuration of Fencer: a {@link FencerClient} from the {@code fencer.*} properties (closed with
 * the context), and, for what is on the class path, a ShedLock {@link FencerLockProvider}, a Spring Integration
 * {@link FencerLockRegistry}, a {@link SpringJdbcFence} over the application's DataSource, the {@code fencer}
 * health indicator and Micrometer meters ({@link FencerMetrics}). Each bean yields to one the application declares.
 */
@AutoConfiguration(afterName = "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration")
@ConditionalOnClass(FencerClient.class)
@EnableConfigurationProperties(FencerProperties.class)
public class FencerAutoConfiguration {

    /** Builds the client from the properties, then lets every {@link FencerClientCustomizer} adjust it. */
    @Bean(destroyMethod = "close")
    @ConditionalOnMissingBean
    public FencerClient fencerClient(FencerProperties properties, ObjectProvider<FencerClientCustomizer> customizers) {
        FencerClient.Builder builder = Fencer.newBuilder().endpoints(properties.endpoints().toArray(String[]::new))
                .callTimeout(properties.callTimeout());
        FencerProperties.Tls tls = properties.tls();
        if (tls.enabled()) {
            builder.tls(tls.ca(), tls.certificate(), tls.key());
        }
        customizers.orderedStream().forEach(customizer -> customizer.customize(builder));
        return builder.build();
    }

    /** Micrometer meters when Micrometer is on the class path and the application has a registry. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(MeterRegistry.class)
    static class MicrometerMetricsConfiguration {
        @Bean
        @ConditionalOnMissingBean
        FencerMetrics fencerMetrics(ObjectProvider<MeterRegistry> registries) {
            // Resolved when the bean is made, not when conditions are judged: no ordering against Boot's metrics.
            MeterRegistry registry = registries.getIfUnique();
            return registry == null ? FencerMetrics.NONE : new MicrometerFencerMetrics(registry);
        }
    }

    /** The {@code fencer} health indicator, with Spring Boot Actuator. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(HealthIndicator.class)
    @ConditionalOnEnabledHealthIndicator("fencer")
    static class HealthConfiguration {
        @Bean
        @ConditionalOnMissingBean(name = "fencerHealthIndicator")
        HealthIndicator fencerHealthIndicator(FencerClient client, FencerProperties properties) {
            return new FencerHealthIndicator(client, properties.sessionTtl());
        }
    }

    /** The ShedLock lock provider, when ShedLock is on the class path and the application has none. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(LockProvider.class)
    static class ShedLockConfiguration {
        @Bean(destroyMethod = "close")
        @ConditionalOnMissingBean(LockProvider.class)
        FencerLockProvider fencerLockProvider(FencerClient client, ObjectProvider<FencerMetrics> metrics) {
            return new FencerLockProvider(client, metrics.getIfAvailable(() -> FencerMetrics.NONE));
        }
    }

    /** The Spring Integration lock registry, when Spring Integration is on the class path and has none. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(ExpirableLockRegistry.class)
    static class LockRegistryConfiguration {
        @Bean(destroyMethod = "close")
        @ConditionalOnMissingBean(LockRegistry.class)
        FencerLockRegistry fencerLockRegistry(FencerClient client, FencerProperties properties,
                ObjectProvider<FencerMetrics> metrics) {
            return new FencerLockRegistry(client, properties.sessionTtl(),
                    metrics.getIfAvailable(() -> FencerMetrics.NONE));
        }
    }

    /** The fence in the application's own database, when it has one DataSource and Spring JDBC. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass({DataSourceUtils.class, JdbcFence.class})
    @ConditionalOnSingleCandidate(DataSource.class)
    static class JdbcFenceConfiguration {
        @Bean
        @ConditionalOnMissingBean
        SpringJdbcFence springJdbcFence(DataSource dataSource, FencerProperties properties,
                ObjectProvider<FencerMetrics> metrics) {
            FencerProperties.Jdbc jdbc = properties.jdbc();
            SpringJdbcFence fence = SpringJdbcFence.create(dataSource, jdbc.dialect(), jdbc.table(),
                    metrics.getIfAvailable(() -> FencerMetrics.NONE));
            if (jdbc.createTable()) {
                fence.createTable();
            }
            return fence;
        }
    }
}
