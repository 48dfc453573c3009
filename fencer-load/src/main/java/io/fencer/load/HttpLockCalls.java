package io.fencer.load;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import com.google.protobuf.InvalidProtocolBufferException;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.Reason;
import io.fencer.core.SessionExpiredException;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Base64;
import java.util.UUID;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;

/**
 * The calls of a lock bench over the HTTP port, as a plain HTTP client makes them ({@code java.net.http}, JSON
 * bodies, the Connect protocol): OpenSession, Acquire, Release and CloseSession, and a Renew of each session every
 * ttl/3 from one timer thread. Failures are read from the Connect error's {@code ErrorDetail}.
 */
public final class HttpLockCalls implements LockCalls, AutoCloseable {
    /** How much longer than its wait an Acquire may take before the HTTP call gives up. */
    private static final Duration CALL_MARGIN = Duration.ofSeconds(10);
    private final HttpClient client;
    private final String base;
    private final ScheduledExecutorService renewals = Executors.newSingleThreadScheduledExecutor(runnable -> {
        Thread thread = new Thread(runnable, "bench-http-renew");
        thread.setDaemon(true);
        return thread;
    });

    /** Returns the calls to the HTTP port at {@code base}, e.g. {@code http://127.0.0.1:7073}. */
    public HttpLockCalls(String base) {
        this.base = base.endsWith("/") ? base.substring(0, base.length() - 1) : base;
        // The HTTP port speaks HTTP/1.1 only: no h2c upgrade attempt on each new connection.
        this.client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(CALL_MARGIN)
                .build();
    }

    @Override
    public BenchSession openSession(Duration ttl) {
        JsonObject request = new JsonObject();
        request.addProperty("ttlMillis", ttl.toMillis());
        JsonObject opened = call("Locks/OpenSession", request, CALL_MARGIN, 0);
        HttpSession session = new HttpSession(opened.get("sessionId").getAsLong(), opened.get("secret").getAsString());
        long periodMillis = Math.max(1, ttl.toMillis() / 3);
        session.renewal = renewals.scheduleAtFixedRate(session::renew, periodMillis, periodMillis,
                TimeUnit.MILLISECONDS);
        return session;
    }

    /** Posts {@code body} to {@code /fencer.v1.<method>} and returns the answer, or throws its Connect error. */
    JsonObject call(String method, JsonObject body, Duration timeout, long sessionId) {
        HttpRequest request = HttpRequest.newBuilder(URI.create(base + "/fencer.v1." + method)).timeout(timeout)
                .header("Content-Type", "application/json").header("Connect-Protocol-Version", "1")
                .header("Connect-Timeout-Ms", Long.toString(timeout.toMillis()))
                .POST(HttpRequest.BodyPublishers.ofString(body.toString())).build();
        HttpResponse<String> response;
        try {
            response = client.send(request, HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            throw new IllegalStateException(method + " over HTTP failed: " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(method + " over HTTP was interrupted", e);
        }
        JsonObject answer = JsonParser.parseString(response.body()).getAsJsonObject();
        if (response.statusCode() != 200) {
            throw failure(method, response.statusCode(), answer, sessionId);
        }
        return answer;
    }

    /** Returns the exception of a Connect error: SESSION_EXPIRED as its type, so the bench opens a new session. */
    static RuntimeException failure(String method, int httpStatus, JsonObject error, long sessionId) {
        String code = error.has("code") ? error.get("code").getAsString() : "unknown";
        String message = error.has("message") ? error.get("message").getAsString() : "";
        JsonArray details = error.getAsJsonArray("details");
        if (details != null && !details.isEmpty()) {
            try {
                ErrorDetail detail = ErrorDetail.parseFrom(Base64.getDecoder().decode(
                        details.get(0).getAsJsonObject().get("value").getAsString()));
                if (detail.getReason() == Reason.REASON_SESSION_EXPIRED) {
                    return new SessionExpiredException(sessionId, message);
                }
            } catch (InvalidProtocolBufferException | IllegalArgumentException e) {
                // no readable detail: report the code and message
            }
        }
        return new IllegalStateException(method + " over HTTP failed " + httpStatus + " " + code + ": " + message);
    }

    @Override
    public void close() {
        renewals.shutdownNow();
    }

    /** A session on the HTTP port: its id and secret, and its renewal timer. */
    private final class HttpSession implements BenchSession {
        private final long id;
        private final String secret;
        private volatile ScheduledFuture<?> renewal;

        HttpSession(long id, String secret) {
            this.id = id;
            this.secret = secret;
        }

        private JsonObject named() {
            JsonObject request = new JsonObject();
            request.addProperty("sessionId", id);
            request.addProperty("sessionSecret", secret);
            return request;
        }

        void renew() {
            try {
                call("Locks/Renew", named(), CALL_MARGIN, id);
            } catch (RuntimeException e) {
                // a lost renewal shows as SESSION_EXPIRED on the next acquire, which opens a new session
            }
        }

        @Override
        public void cycle(String lock, Duration wait, LockBench.Mode mode, int permits, Holding holding) {
            JsonObject acquire = named();
            acquire.addProperty("requestId", UUID.randomUUID().toString());
            acquire.addProperty("waitMillis", wait.toMillis());
            String method = "Locks/Acquire";
            switch (mode) {
                case EXCLUSIVE -> acquire.addProperty("lock", lock);
                case SHARED -> {
                    acquire.addProperty("lock", lock);
                    acquire.addProperty("mode", "LOCK_MODE_SHARED");
                }
                case SEMAPHORE -> {
                    method = "Locks/AcquirePermit";
                    acquire.addProperty("semaphore", lock);
                    acquire.addProperty("permits", permits);
                }
            }
            JsonObject granted = call(method, acquire, wait.plus(CALL_MARGIN), id);
            if (!granted.has("acquired") || !granted.get("acquired").getAsBoolean()) {
                throw new IllegalStateException(method + " of " + lock + " over HTTP not granted within " + wait);
            }
            JsonObject token = granted.getAsJsonObject("token");
            holding.held(token.get("lock").getAsString(), token.get("value").getAsLong());
            JsonObject release = named();
            release.add("token", token);
            call("Locks/Release", release, CALL_MARGIN, id);
        }

        @Override
        public void close() {
            ScheduledFuture<?> timer = renewal;
            if (timer != null) {
                timer.cancel(false);
            }
            try {
                call("Locks/CloseSession", named(), CALL_MARGIN, id);
            } catch (RuntimeException e) {
                // the session ends on the service anyway when its lease runs out
            }
        }
    }
}
