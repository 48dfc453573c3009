package io.fencer.server.admin;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonObject;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.fencer.server.http.ConnectHttpServer;
import io.fencer.server.raft.ApplyHalt;
import io.fencer.server.raft.RaftNode;
import io.fencer.server.tls.HttpServers;
import io.fencer.server.tls.TlsMaterial;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The admin HTTP endpoint: {@code GET /healthz} (JSON; for a lock server: status, id, role, leader, appliedIndex,
 * division, 503 unless the peer serves, see {@link #lockHealth}; for a store server: status, role "store",
 * unitsOpen) and {@code GET /metrics} (Prometheus text). Everything else is 404. Served over HTTPS when the server
 * has TLS.
 */
public final class AdminHttpServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(AdminHttpServer.class);
    /** Writes the health bodies on one line, escaping by JSON's rules only (they are read by people too). */
    private static final Gson JSON = new GsonBuilder().disableHtmlEscaping().create();

    /** Connections the kernel queues before the endpoint accepts them. */
    private static final int BACKLOG = 64;

    static {
        ConnectHttpServer.disableNagle(); // before the JVM's first JDK HTTP server reads the setting
    }

    private final HttpServer server;
    private final ExecutorService executor;
    private final Supplier<Health> health;
    private final Supplier<String> metrics;

    /** An answer to /healthz: the HTTP status and the JSON body. */
    public record Health(int status, String json) {}

    private AdminHttpServer(HttpServer server, Supplier<Health> health, Supplier<String> metrics) {
        this.server = server;
        this.health = health;
        this.metrics = metrics;
        this.executor = Executors.newSingleThreadExecutor(runnable -> {
            Thread thread = new Thread(runnable, "fencer-admin-http");
            thread.setDaemon(true);
            return thread;
        });
    }

    public static AdminHttpServer start(String host, int port, TlsMaterial tls, String peerId, RaftNode raft,
            Supplier<String> metrics) throws IOException {
        return start(host, port, tls, () -> raftHealth(peerId, raft), metrics);
    }

    /**
     * Starts the endpoint on {@code host:port}.
     *
     * @param tls the TLS it serves (HTTPS only); with a client CA, a client without a certificate of it is refused
     *     at the handshake; null = plain HTTP
     */
    public static AdminHttpServer start(String host, int port, TlsMaterial tls, Supplier<Health> health,
            Supplier<String> metrics) throws IOException {
        HttpServer server = HttpServers.bind(new InetSocketAddress(host, port), BACKLOG, tls);
        AdminHttpServer admin = new AdminHttpServer(server, health, metrics);
        server.createContext("/", admin::handle);
        server.setExecutor(admin.executor);
        server.start();
        return admin;
    }

    public int port() {
        return server.getAddress().getPort();
    }

    private void handle(HttpExchange exchange) throws IOException {
        try (exchange) {
            String path = exchange.getRequestURI().getPath();
            if (!"GET".equals(exchange.getRequestMethod()) && !"HEAD".equals(exchange.getRequestMethod())) {
                send(exchange, 405, "text/plain; charset=utf-8", "method not allowed\n");
            } else if ("/healthz".equals(path)) {
                Health answer = health.get();
                send(exchange, answer.status(), "application/json", answer.json());
            } else if ("/metrics".equals(path)) {
                send(exchange, 200, "text/plain; version=0.0.4; charset=utf-8", metrics.get());
            } else {
                send(exchange, 404, "text/plain; charset=utf-8", "not found: " + path + "\n");
            }
        } catch (RuntimeException e) {
            LOG.warn("admin request {} failed", exchange.getRequestURI(), e);
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

    private static void send(HttpExchange exchange, int status, String contentType, String body) throws IOException {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        exchange.getResponseHeaders().set("Content-Type", contentType);
        boolean head = "HEAD".equals(exchange.getRequestMethod());
        exchange.sendResponseHeaders(status, head ? -1 : bytes.length);
        if (!head) {
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(bytes);
            }
        }
    }

    @Override
    public void close() {
        server.stop(0);
        executor.shutdownNow();
    }
}
