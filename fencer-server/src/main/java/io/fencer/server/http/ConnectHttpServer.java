package io.fencer.server.http;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import com.google.protobuf.util.JsonFormat;
import io.fencer.api.errors.WireErrors;
import io.fencer.core.FencerException;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LimitExceededException;
import io.fencer.core.Ticker;
import io.fencer.server.net.ConnectionCaps;
import io.fencer.server.net.HttpCall;
import io.fencer.server.net.HttpPort;
import io.fencer.server.net.PortLimits;
import io.fencer.server.rpc.InProcessEndpoint;
import io.fencer.server.tls.TlsMaterial;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServiceDescriptor;
import io.grpc.Status;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.StreamObserver;
import io.micrometer.core.instrument.MeterRegistry;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.ScheduledExecutorService;
import java.util.function.BiPredicate;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The HTTP port: every unary method of the hosted gRPC services in the Connect protocol's unary form
 * (connectrpc.com/docs/protocol): {@code POST /fencer.v1.Locks/Acquire}, a body in proto3 JSON
 * ({@code application/json}) or binary ({@code application/proto}), {@code Connect-Timeout-Ms} as the call's
 * deadline, and failures as Connect errors ({@link ConnectErrors}).
 *
 * <p>Each call goes, with its bytes as they are (JSON converted to them), to the very gRPC services of the gRPC port
 * through an {@link InProcessEndpoint}, as the identity of the client certificate this port's TLS verified: the
 * limits, validation, ACLs and error catalogue are the gRPC port's. This port adds only what HTTP needs: its body
 * limit ({@link #REQUEST_BODY_BYTES_MAX}, checked while reading), the JSON mapping (as strict as the binary form:
 * {@link StrictJson}), and the protocol's headers.
 *
 * <p>Resources: the port runs on an {@link HttpPort} (Netty) with {@link #THREADS} event loops, bounded by the
 * server's {@link PortLimits}: a client slow to send its headers or body, or its TLS handshake, holds its own
 * connection until the timeout, and no thread; connections over the caps, in total or per address, are closed as
 * they are accepted; the bodies kept at once are bounded ({@link #BODIES_BYTES_MAX}). A waiting Acquire holds no
 * thread, only its place in the queue, until its {@code wait_millis} or {@code Connect-Timeout-Ms} passes, or its
 * client closes the connection (which cancels it, as a cancelled gRPC call is).
 */
public final class ConnectHttpServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ConnectHttpServer.class);
    /** The largest request body: a Store write at its 5 MiB limit, in JSON (base64 adds a third), fits. */
    public static final int REQUEST_BODY_BYTES_MAX = 8 * 1024 * 1024;
    /** The most request body bytes the port keeps at once, over all its connections: eight bodies at the limit. */
    static final long BODIES_BYTES_MAX = 8L * REQUEST_BODY_BYTES_MAX;
    /** How much of a body over the limit is read and dropped before the answer; the connection closes after it. */
    static final long DISCARDED_BYTES_MAX = 64L * 1024 * 1024;
    /** The port's event loops: they read, convert JSON and start every call (whose handlers never block). */
    static final int THREADS = Math.max(2, Runtime.getRuntime().availableProcessors());
    /** Threads that write answers once the in-process calls complete. */
    static final int WRITERS = 4;
    private static final String JSON = "application/json";
    private static final String PROTO = "application/proto";
    private static final JsonFormat.Parser JSON_PARSER = JsonFormat.parser();
    private static final JsonFormat.Printer JSON_PRINTER = JsonFormat.printer().omittingInsignificantWhitespace();

    private final HttpPort port;
    private final InProcessEndpoint endpoint;
    private final Map<String, ConnectRoute> routes;
    private final ExecutorService writers = Executors.newFixedThreadPool(WRITERS, daemonThreads("fencer-http-write"));
    /** Ends the console's event polls. */
    private final ScheduledExecutorService consoleTimers = Executors.newSingleThreadScheduledExecutor(
            daemonThreads("fencer-console-timer"));
    /** The web console at /console, or null when the port serves none. */
    private final ConsoleRoutes console;

    private ConnectHttpServer(String host, int port, TlsMaterial tls, List<ServerServiceDefinition> definitions,
            List<ServiceDescriptor> descriptors, PortLimits limits, MeterRegistry registry, Ticker ticker,
            BiPredicate<String, String> mayRevoke, BiPredicate<String, String> mayRead, RecentRefusals refusals)
            throws IOException {
        this.routes = ConnectRoute.of(descriptors);
        this.endpoint = InProcessEndpoint.start(definitions, writers);
        this.console = mayRevoke == null ? null : new ConsoleRoutes(endpoint, mayRevoke, mayRead, refusals, writers,
                consoleTimers);
        ConnectionCaps caps = new ConnectionCaps("http", "http", limits.httpConnectionsMax(),
                limits.httpConnectionsPerAddressMax(), true, registry, ticker);
        HttpPort.Settings settings = new HttpPort.Settings("http", REQUEST_BODY_BYTES_MAX, BODIES_BYTES_MAX,
                DISCARDED_BYTES_MAX, THREADS);
        try {
            this.port = HttpPort.start(host, port, tls, limits, settings, caps, this::handle);
        } catch (IOException | RuntimeException e) {
            endpoint.close();
            writers.shutdown();
            consoleTimers.shutdown();
            throw e;
        }
    }

    /**
     * Starts the HTTP port on {@code host:port}.
     *
     * @param definitions the services, as the gRPC port hosts them (guarded, intercepted), which every call goes to
     * @param descriptors their generated descriptors ({@code LocksGrpc.getServiceDescriptor()}): paths and types
     * @param tls the TLS it serves (HTTPS only); with a client CA, a client without a certificate of it is refused
     *     at the handshake, and a client's certificate names its identity; null = plain HTTP, every caller anonymous
     * @param limits the timeouts and the caps ({@link PortLimits#httpConnectionsMax()} and per address) it keeps
     * @param registry where its connection metrics go ({@code port="http"})
     * @throws IOException when the port cannot be bound
     */
    public static ConnectHttpServer start(String host, int port, TlsMaterial tls,
            List<ServerServiceDefinition> definitions, List<ServiceDescriptor> descriptors, PortLimits limits,
            MeterRegistry registry, Ticker ticker) throws IOException {
        return new ConnectHttpServer(host, port, tls, definitions, descriptors, limits, registry, ticker, null, null,
                null);
    }

    /**
     * As {@link #start(String, int, TlsMaterial, List, List, PortLimits, MeterRegistry, Ticker)}, serving also the
     * web console at {@code /console} (see {@link ConsoleRoutes}); {@code mayRevoke} tells whether an identity holds
     * {@code admin} on a lock, to show it the revoke buttons (the Locks service checks every revoke itself);
     * {@code mayRead} whether it holds {@code read} on a store scope, to show it that scope's {@code refusals} (null
     * when the server hosts no store).
     */
    public static ConnectHttpServer startWithConsole(String host, int port, TlsMaterial tls,
            List<ServerServiceDefinition> definitions, List<ServiceDescriptor> descriptors, PortLimits limits,
            MeterRegistry registry, Ticker ticker, BiPredicate<String, String> mayRevoke,
            BiPredicate<String, String> mayRead, RecentRefusals refusals) throws IOException {
        return new ConnectHttpServer(host, port, tls, definitions, descriptors, limits, registry, ticker,
                java.util.Objects.requireNonNull(mayRevoke, "mayRevoke"),
                java.util.Objects.requireNonNull(mayRead, "mayRead"), refusals);
    }

    /** Returns the bound port. */
    public int port() {
        return port.port();
    }

    private void handle(HttpCall call) {
        try {
            if (console != null && ConsoleRoutes.serves(call.path())) {
                console.handle(call);
                return;
            }
            Request request = parseHeaders(call, routes.get(call.path()));
            if (request == null) {
                return; // answered
            }
            if (call.overflow() != HttpCall.Overflow.NONE) {
                answerOverflow(call);
                return;
            }
            call(call, request);
        } catch (RuntimeException e) {
            LOG.warn("HTTP request {} failed", call.path(), e);
            answer(call, ConnectErrors.of(Status.Code.INTERNAL, "unexpected " + e.getClass().getSimpleName()));
        }
    }

    /** A call as its headers specify it. */
    private record Request(ConnectRoute route, boolean json, long timeoutMillis) {}

    /** Returns the call the headers specify, or null after answering a request that is not one. */
    private Request parseHeaders(HttpCall call, ConnectRoute route) {
        String path = call.path();
        if (!"POST".equals(call.method())) {
            answer(call, 405, ConnectErrors.of(Status.Code.UNIMPLEMENTED, call.method() + " "
                    + path + ": the HTTP port serves POST only"), Map.of("Allow", "POST"));
            return null;
        }
        if (route == null) {
            answer(call, 404, ConnectErrors.of(Status.Code.UNIMPLEMENTED, "no method " + path + "; methods are "
                    + "POST /fencer.v1.Locks/<Method> and /fencer.v1.Store/<Method>"));
            return null;
        }
        if (!route.unary()) {
            answer(call, ConnectErrors.of(Status.Code.UNIMPLEMENTED, path + " is a streaming method, which the "
                    + "HTTP port does not serve (for sessions, call Renew every ttl/3)"));
            return null;
        }
        String contentType = mediaType(call.header("Content-Type"));
        if (!JSON.equals(contentType) && !PROTO.equals(contentType)) {
            answer(call, 415, ConnectErrors.of(Status.Code.UNIMPLEMENTED, "content type '" + contentType
                    + "' is not served: use " + JSON + " or " + PROTO), Map.of("Accept-Post", JSON + ", " + PROTO));
            return null;
        }
        String version = call.header("Connect-Protocol-Version");
        if (version != null && !"1".equals(version.trim())) {
            answer(call, ConnectErrors.of(Status.Code.INVALID_ARGUMENT, "Connect-Protocol-Version '" + version
                    + "' is not served: the HTTP port speaks version 1"));
            return null;
        }
        String encoding = call.header("Content-Encoding");
        if (encoding != null && !"identity".equalsIgnoreCase(encoding.trim())) {
            answer(call, ConnectErrors.of(Status.Code.UNIMPLEMENTED, "Content-Encoding '" + encoding
                    + "' is not served: the HTTP port supports identity only"));
            return null;
        }
        long timeoutMillis = timeoutMillis(call.header("Connect-Timeout-Ms"));
        if (timeoutMillis < 0) {
            answer(call, ConnectErrors.of(Status.Code.INVALID_ARGUMENT, "Connect-Timeout-Ms '"
                    + call.header("Connect-Timeout-Ms")
                    + "' is not a positive integer of at most 10 digits"));
            return null;
        }
        return new Request(route, JSON.equals(contentType), timeoutMillis);
    }

    /** Returns the media type of a Content-Type header, lower case, without parameters (charset). */
    static String mediaType(String contentType) {
        if (contentType == null) {
            return "";
        }
        int semicolon = contentType.indexOf(';');
        return (semicolon < 0 ? contentType : contentType.substring(0, semicolon)).trim().toLowerCase(Locale.ROOT);
    }

    /** Returns the timeout of a Connect-Timeout-Ms header: 0 when absent, -1 when malformed. */
    static long timeoutMillis(String header) {
        if (header == null) {
            return 0;
        }
        String digits = header.trim();
        if (digits.isEmpty() || digits.length() > 10 || !digits.chars().allMatch(c -> c >= '0' && c <= '9')) {
            return -1;
        }
        long millis = Long.parseLong(digits);
        return millis == 0 ? -1 : millis;
    }

    /** Answers a body the port did not keep whole: over this port's limit, or while it kept too many bodies. */
    private void answerOverflow(HttpCall call) {
        LimitExceededException error = call.overflow() == HttpCall.Overflow.REQUEST_BODY
                ? new LimitExceededException("httpRequestBodyBytesMax", REQUEST_BODY_BYTES_MAX, "the request body is "
                        + "over the HTTP port's limit of " + REQUEST_BODY_BYTES_MAX + " bytes (" + call.bodyBytesRead()
                        + " bytes read)")
                : new LimitExceededException("httpBodiesBytesMax", BODIES_BYTES_MAX, "the HTTP port holds "
                        + BODIES_BYTES_MAX + " bytes of request bodies at once, its most: this one ("
                        + call.bodyBytesRead() + " bytes read) was dropped; retry later");
        answer(call, ConnectErrors.of(WireErrors.toStatusException(error)));
    }

    /** Converts the body to the request's bytes and calls the method in-process; the answer comes back async. */
    private void call(HttpCall http, Request request) {
        byte[] bytes;
        try {
            bytes = request.json() ? fromJson(request.route(), http.body()) : http.body();
        } catch (FencerException e) {
            answer(http, ConnectErrors.of(WireErrors.toStatusException(e)));
            return;
        }
        CallOptions options = CallOptions.DEFAULT;
        if (request.timeoutMillis() > 0) {
            options = options.withDeadlineAfter(request.timeoutMillis(), TimeUnit.MILLISECONDS);
        }
        ClientCall<byte[], byte[]> call = endpoint.channelFor(http.tlsSession(), http.remoteAddress()).newCall(request.route().method(),
                options);
        // A client that closes its connection gives the call up, as a cancelled gRPC call does: a waiting Acquire
        // leaves the queue then rather than at its wait's end.
        http.onClose(() -> call.cancel("the HTTP client closed its connection", null));
        ClientCalls.asyncUnaryCall(call, bytes, new Answer(http, request));
    }

    /**
     * Returns the binary form of a JSON request, refusing what the binary form could not carry (invalid UTF-8,
     * unpaired surrogates), malformed JSON, unknown fields and wrong types (see {@link StrictJson}).
     */
    static byte[] fromJson(ConnectRoute route, byte[] body) {
        Message.Builder builder = route.requestPrototype().newBuilderForType();
        String what = route.path().substring(1) + " request";
        // An empty body is the empty message, as in binary: `curl -d ''` for a request without fields.
        String json = body.length == 0 ? "{}" : StrictJson.utf8(body, what);
        StrictJson.check(json, builder.getDescriptorForType(), what);
        try {
            JSON_PARSER.merge(json, builder);
        } catch (InvalidProtocolBufferException | RuntimeException e) {
            // JsonFormat names the field or value; the body itself is not echoed.
            Map.Entry<String, JsonElement> member = offendingMember(route, json);
            String field = member == null ? "body" : member.getKey();
            throw new InvalidArgumentException(field, member == null ? "" : member.getValue().toString(), "the "
                    + what + " is not valid JSON of " + builder.getDescriptorForType().getFullName()
                    + (member == null ? "" : " in field '" + field + "'") + ": " + withoutClassName(e));
        }
        return builder.build().toByteArray();
    }

    /**
     * Returns the top-level member of a JSON object that does not parse as the request (JsonFormat's messages do not
     * always name it), or null when none alone fails.
     */
    private static Map.Entry<String, JsonElement> offendingMember(ConnectRoute route, String json) {
        JsonObject object;
        try {
            object = JsonParser.parseString(json).getAsJsonObject();
        } catch (RuntimeException e) {
            return null;
        }
        for (Map.Entry<String, JsonElement> member : object.entrySet()) {
            JsonObject alone = new JsonObject();
            alone.add(member.getKey(), member.getValue());
            try {
                JSON_PARSER.merge(alone.toString(), route.requestPrototype().newBuilderForType());
            } catch (InvalidProtocolBufferException | RuntimeException e) {
                return member;
            }
        }
        return null;
    }

    /** Returns a parser's message without the exception class names it may start with ("java.io.EOFException: "). */
    static String withoutClassName(Throwable error) {
        String message = String.valueOf(error.getMessage());
        return message.replaceFirst("^(?:[A-Za-z_$][\\w$]*\\.)+[A-Za-z_$][\\w$]*(?:Exception|Error): ", "");
    }

    /** Writes a call's answer: its message in the request's codec, or its Connect error. */
    private final class Answer implements StreamObserver<byte[]> {
        private final HttpCall http;
        private final Request request;
        private byte[] response;

        Answer(HttpCall http, Request request) {
            this.http = http;
            this.request = request;
        }

        @Override
        public void onNext(byte[] value) {
            response = value;
        }

        @Override
        public void onError(Throwable error) {
            answer(http, ConnectErrors.of(error));
        }

        @Override
        public void onCompleted() {
            try {
                if (!request.json()) {
                    http.answer(200, PROTO, response);
                    return;
                }
                Message message = request.route().responsePrototype().getParserForType().parseFrom(response);
                http.answer(200, JSON, (JSON_PRINTER.print(message) + "\n").getBytes(StandardCharsets.UTF_8));
            } catch (InvalidProtocolBufferException e) {
                answer(http, ConnectErrors.of(Status.Code.INTERNAL, "the answer does not parse: "
                        + e.getMessage()));
            }
        }
    }

    private static void answer(HttpCall call, ConnectErrors.Answer error) {
        answer(call, error.httpStatus(), error, Map.of());
    }

    private static void answer(HttpCall call, int httpStatus, ConnectErrors.Answer error) {
        answer(call, httpStatus, error, Map.of());
    }

    private static void answer(HttpCall call, int httpStatus, ConnectErrors.Answer error,
            Map<String, String> headers) {
        call.answer(httpStatus, JSON, error.json().getBytes(StandardCharsets.UTF_8), headers);
    }

    private static ThreadFactory daemonThreads(String prefix) {
        AtomicInteger count = new AtomicInteger();
        return runnable -> {
            Thread thread = new Thread(runnable, prefix + "-" + count.incrementAndGet());
            thread.setDaemon(true);
            return thread;
        };
    }

    @Override
    public void close() {
        port.close();
        endpoint.close();
        writers.shutdown(); // the calls the endpoint just cancelled answer nobody: their connections are closed
        consoleTimers.shutdownNow();
    }
}
