package io.fencer.spring;

import io.fencer.jdbc.Dialect;
import io.fencer.jdbc.JdbcFence;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * The {@code fencer.*} properties of a Spring application: where the Fencer group is, how long sessions last, and
 * how to reach it over TLS.
 *
 * <pre>
 * fencer.endpoints=10.0.0.5:7070,10.0.0.6:7070
 * fencer.session-ttl=10s
 * fencer.tls.ca=/etc/fencer/ca.pem
 * fencer.tls.certificate=/etc/fencer/billing.pem
 * fencer.tls.key=/etc/fencer/billing-key.pem
 * </pre>
 *
 * @param endpoints the peers' client addresses, {@code host:port}; at least one (default {@code 127.0.0.1:7070})
 * @param sessionTtl the lease of the sessions this integration opens for the lock registry and the health check
 *     (1 s to 1 h, default 10 s); ShedLock jobs use their {@code lockAtMostFor} instead
 * @param callTimeout how long one call may take, retries included (default 10 s)
 * @param tls TLS to the servers; off unless {@code fencer.tls.ca} is set
 * @param jdbc the fence table that {@code SpringJdbcFence} checks tokens in
 */
@ConfigurationProperties("fencer")
public record FencerProperties(
        @DefaultValue("127.0.0.1:7070") List<String> endpoints,
        @DefaultValue("10s") Duration sessionTtl,
        @DefaultValue("10s") Duration callTimeout,
        @DefaultValue Tls tls,
        @DefaultValue Jdbc jdbc) {
    /** The shortest session ttl the service grants. */
    public static final Duration SESSION_TTL_MIN = Duration.ofSeconds(1);
    /** The longest session ttl the service grants. */
    public static final Duration SESSION_TTL_MAX = Duration.ofHours(1);

    public FencerProperties {
        endpoints = List.copyOf(Objects.requireNonNull(endpoints, "fencer.endpoints"));
        if (endpoints.isEmpty()) {
            throw new IllegalArgumentException("fencer.endpoints must name at least one host:port");
        }
        Objects.requireNonNull(sessionTtl, "fencer.session-ttl");
        if (sessionTtl.compareTo(SESSION_TTL_MIN) < 0 || sessionTtl.compareTo(SESSION_TTL_MAX) > 0) {
            throw new IllegalArgumentException("fencer.session-ttl must be between sessionTtlMin "
                    + SESSION_TTL_MIN.toMillis() + " ms and sessionTtlMax " + SESSION_TTL_MAX.toMillis()
                    + " ms, got " + sessionTtl.toMillis() + " ms");
        }
        Objects.requireNonNull(callTimeout, "fencer.call-timeout");
        if (callTimeout.isNegative() || callTimeout.isZero()) {
            throw new IllegalArgumentException("fencer.call-timeout must be positive, got " + callTimeout);
        }
        Objects.requireNonNull(tls, "fencer.tls");
        Objects.requireNonNull(jdbc, "fencer.jdbc");
    }

    /**
     * TLS to the servers ({@code fencer server --tls-cert ... [--tls-ca ...]}).
     *
     * @param ca PEM: the CA that issued the servers' certificates; TLS is on when this is set
     * @param certificate PEM: this application's client certificate, when the servers require one; its CN is the
     *     identity the servers know the application by
     * @param key PEM, unencrypted PKCS#8: the client certificate's key; given with the certificate or not at all
     */
    public record Tls(Path ca, Path certificate, Path key) {
        public Tls {
            if ((certificate == null) != (key == null)) {
                throw new IllegalArgumentException("fencer.tls.certificate and fencer.tls.key go together, got "
                        + "certificate " + certificate + " and key " + key);
            }
            if (ca == null && certificate != null) {
                throw new IllegalArgumentException("fencer.tls.certificate " + certificate + " needs fencer.tls.ca,"
                        + " the CA that issued the servers' certificates");
            }
        }

        /** Returns true when TLS is configured. */
        public boolean enabled() {
            return ca != null;
        }
    }

    /**
     * The fence table of {@code SpringJdbcFence}.
     *
     * @param dialect the database's dialect, or null to detect it from the DataSource at start-up
     * @param table the fence table (default {@value JdbcFence#TABLE_DEFAULT})
     * @param createTable whether to create the table at start-up when absent (default false: schemas are usually
     *     managed by migrations)
     */
    public record Jdbc(Dialect dialect, @DefaultValue(JdbcFence.TABLE_DEFAULT) String table,
            @DefaultValue("false") boolean createTable) {}
}
