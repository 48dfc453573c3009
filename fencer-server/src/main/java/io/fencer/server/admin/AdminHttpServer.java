package io.fencer.server.admin;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonObject;
import io.fencer.core.Ticker;
import io.fencer.server.net.ConnectionCaps;
import io.fencer.server.net.HttpCall;
import io.fencer.server.net.HttpPort;
import io.fencer.server.net.PortLimits;
import io.fencer.server.raft.ApplyHalt;
import io.fencer.server.raft.RaftNode;
import io.fencer.server.tls.TlsMaterial;
import io.micrometer.core.instrument.MeterRegistry;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The admin HTTP endpoint: {@code GET /healthz} (JSON; for a lock server: status, id, role, leader, appliedIndex,
 * division, 503 unless the peer serves, see {@link #lockHealth}; for a store server: status, role "store",
 * unitsOpen) and {@code GET /metrics} (Prometheus text). Everything else is 404. Served over HTTPS when the server
 * has TLS.
 *
 * <p>It runs on an {@link HttpPort} (Netty), bounded by the server's {@link PortLimits}: a client that opens a
 * connection and sends one byte, or stalls its TLS handshake, holds that connection until its timeout and nothing
 * else, so health checks and scrapes of other clients keep their answers; connections over the caps, in total or
 * from one address, are closed as they are accepted.
 */
public final class AdminHttpServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(AdminHttpServer.class);
    /** Writes the health bodies on one line, escaping by JSON's rules only (they are read by people too). */
    private static final Gson JSON = new GsonBuilder().disableHtmlEscaping().create();
    /**
     * The port's event loops: both answers are computed in memory, in microseconds, so two serve any number of
     * scrapers, and one busy with a large scrape leaves the other to answer health checks.
     */
    static final int THREADS = 2;
    /** Admin requests have no body: a small one is read and ignored; larger ones are refused. */
    static final int REQUEST_BODY_BYTES_MAX = 16 * 1024;
    /** The most request body bytes the port keeps at once: 64 requests at the limit. */
    static final long BODIES_BYTES_MAX = 64L * REQUEST_BODY_BYTES_MAX;

    private final HttpPort port;
    private final Supplier<Health> health;
    private final Supplier<String> metrics;

    /** An answer to /healthz: the HTTP status and the JSON body. */
    public record Health(int status, String json) {}

    private AdminHttpServer(String host, int port, TlsMaterial tls, Supplier<Health> health,
            Supplier<String> metrics, PortLimits limits, MeterRegistry registry, Ticker ticker) throws IOException {
        this.health = health;
        this.metrics = metrics;
        ConnectionCaps caps = new ConnectionCaps("admin", "http", limits.httpConnectionsMax(),
                limits.httpConnectionsPerAddressMax(), true, registry, ticker);
        HttpPort.Settings settings = new HttpPort.Settings("admin", REQUEST_BODY_BYTES_MAX, BODIES_BYTES_MAX,
                REQUEST_BODY_BYTES_MAX, THREADS);
        this.port = HttpPort.start(host, port, tls, limits, settings, caps, this::handle);
    }

    public static AdminHttpServer start(String host, int port, TlsMaterial tls, String peerId, RaftNode raft,
            Supplier<String> metrics, PortLimits limits, MeterRegistry registry, Ticker ticker) throws IOException {
        return start(host, port, tls, () -> raftHealth(peerId, raft), metrics, limits, registry, ticker);
    }

    /**
     * Starts the endpoint on {@code host:port}.
     *
     * @param tls the TLS it serves (HTTPS only); with a client CA, a client without a certificate of it is refused
     *     at the handshake; null = plain HTTP
     * @param limits the timeouts and the caps ({@link PortLimits#httpConnectionsMax()} and per address) it keeps
     * @param registry where its connection metrics go ({@code port="admin"})
     */
    public static AdminHttpServer start(String host, int port, TlsMaterial tls, Supplier<Health> health,
            Supplier<String> metrics, PortLimits limits, MeterRegistry registry, Ticker ticker) throws IOException {
        return new AdminHttpServer(host, port, tls, health, metrics, limits, registry, ticker);
    }

    public int port() {
        return port.port();
    }

    private void handle(HttpCall call) {
        String path = call.path();
        try {
            if (!"GET".equals(call.method()) && !"HEAD".equals(call.method())) {
                send(call, 405, "text/plain; charset=utf-8", "method not allowed\n", Map.of("Allow", "GET, HEAD"));
            } else if (call.overflow() != HttpCall.Overflow.NONE) {
                send(call, 413, "text/plain; charset=utf-8", "the admin port reads no request body over "
                        + REQUEST_BODY_BYTES_MAX + " bytes\n", Map.of());
            } else if ("/healthz".equals(path)) {
                Health answer = health.get();
                send(call, answer.status(), "application/json", answer.json(), Map.of());
            } else if ("/metrics".equals(path)) {
                send(call, 200, "text/plain; version=0.0.4; charset=utf-8", metrics.get(), Map.of());
            } else {
                send(call, 404, "text/plain; charset=utf-8", "not found: " + path + "\n", Map.of());
            }
        } catch (RuntimeException e) {
            LOG.warn("admin request {} failed", path, e);
            send(call, 500, "text/plain; charset=utf-8", "internal error: " + e.getClass().getSimpleName() + "\n",
                    Map.of());
        }
    }

    private static Health raftHealth(String peerId, RaftNode raft) {
        return lockHealth(peerId, raft.role(), raft.leaderClientAddress(), raft.appliedIndex(), raft.divisionState(),
                raft.halt());
    }

    /**
     * Returns a lock peer's answer to /healthz: 200 while it serves; 503 with {@code status} {@code halted} (and the
     * halt's {@code index}, {@code reason} and {@code recovery}) once it halted applying the log, {@code not-running}
     * while its Raft division is not running (closed, failed, not started yet or installing a snapshot: its state is
     * {@code division}), {@code no-leader} while no leader is known.
     */
    static Health lockHealth(String peerId, String role, String leader, long appliedIndex, String division,
            ApplyHalt halt) {
        String status = halt != null ? "halted" : !RaftNode.RUNNING.equals(division) ? "not-running"
                : leader.isEmpty() ? "no-leader" : "ok";
        JsonObject body = new JsonObject();
        body.addProperty("status", status);
        body.addProperty("id", peerId);
        body.addProperty("role", role);
        body.addProperty("leader", leader);
        body.addProperty("appliedIndex", appliedIndex);
        body.addProperty("division", division);
        if (halt != null) {
            body.addProperty("index", halt.index());
            body.addProperty("reason", halt.reason());
            body.addProperty("recovery", ApplyHalt.RECOVERY);
        }
        return new Health("ok".equals(status) ? 200 : 503, JSON.toJson(body) + "\n");
    }

    /** Returns a store server's answer to /healthz: 200 while {@code serving}, 503 once it is closing. */
    public static Health storeHealth(boolean serving, int unitsOpen) {
        JsonObject body = new JsonObject();
        body.addProperty("status", serving ? "ok" : "closing");
        body.addProperty("role", "store");
        body.addProperty("unitsOpen", unitsOpen);
        return new Health(serving ? 200 : 503, JSON.toJson(body) + "\n");
    }

    private static void send(HttpCall call, int status, String contentType, String body,
            Map<String, String> headers) {
        call.answer(status, contentType, body.getBytes(StandardCharsets.UTF_8), headers);
    }

    @Override
    public void close() {
        port.close();
    }
}
