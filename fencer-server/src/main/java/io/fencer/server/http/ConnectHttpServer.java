package io.fencer.server.http;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import com.google.protobuf.util.JsonFormat;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import com.sun.net.httpserver.HttpsExchange;
import io.fencer.api.errors.WireErrors;
import io.fencer.core.FencerException;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LimitExceededException;
import io.fencer.server.rpc.InProcessEndpoint;
import io.fencer.server.tls.HttpServers;
import io.fencer.server.tls.TlsMaterial;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ServerServiceDefinition;
import io.grpc.ServiceDescriptor;
import io.grpc.Status;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.net.ssl.SSLSession;
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
 * limit ({@link #REQUEST_BODY_BYTES_MAX}, checked while reading), the JSON mapping, and the protocol's headers.
 *
 * <p>Resources: {@link #READERS} threads read requests (the JDK server reads headers on them too) and hand each call
 * off without waiting for its answer; answers are written by {@link #WRITERS} threads. A client slow to send its body
 * holds a reader for at most {@link #BODY_READ_MILLIS_MAX}, then its connection is closed; a client that never
 * completes its headers holds a reader until it disconnects (the JDK server offers no header timeout that would not
 * also cut long Acquire waits); a waiting Acquire holds no thread, only its place in the queue, until its
 * {@code wait_millis} or {@code Connect-Timeout-Ms} passes.
 */
public final class ConnectHttpServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ConnectHttpServer.class);
    /** The largest request body: a Store write at its 5 MiB limit, in JSON (base64 adds a third), fits. */
    public static final int REQUEST_BODY_BYTES_MAX = 8 * 1024 * 1024;
    /** How long a client may take to send its body once its headers arrived. */
    static final long BODY_READ_MILLIS_MAX = 10_000;
    /** How much of a body over the limit is read and dropped before the answer; the connection closes after it. */
    static final long DISCARDED_BYTES_MAX = 64L * 1024 * 1024;
    /** Threads that read requests; with {@link #REQUEST_BODY_BYTES_MAX}, they bound the memory of bodies read. */
    static final int READERS = 8;
    static final int WRITERS = 4;
    private static final int BACKLOG = 128;
    private static final String JSON = "application/json";
    private static final String PROTO = "application/proto";
    private static final JsonFormat.Parser JSON_PARSER = JsonFormat.parser();
    private static final JsonFormat.Printer JSON_PRINTER = JsonFormat.printer().omittingInsignificantWhitespace();

    /** The JDK server's switch for TCP_NODELAY, read once, when its first server of the JVM is created. */
    private static final String NO_DELAY_PROPERTY = "sun.net.httpserver.nodelay";

    static {
        disableNagle();
    }

    private final HttpServer server;
    private final InProcessEndpoint endpoint;
    private final Map<String, ConnectRoute> routes;
    private final ExecutorService readers = Executors.newFixedThreadPool(READERS, daemonThreads("fencer-http-read"));
    private final ExecutorService writers = Executors.newFixedThreadPool(WRITERS, daemonThreads("fencer-http-write"));
    private final ScheduledExecutorService watchdog =
            Executors.newSingleThreadScheduledExecutor(daemonThreads("fencer-http-watchdog"));

    private ConnectHttpServer(HttpServer server, List<ServerServiceDefinition> definitions,
            List<ServiceDescriptor> descriptors) throws IOException {
        this.server = server;
        this.routes = ConnectRoute.of(descriptors);
        this.endpoint = InProcessEndpoint.start(definitions, writers);
    }

    /**
     * Starts the HTTP port on {@code host:port}.
     *
     * @param definitions the services, as the gRPC port hosts them (guarded, intercepted), which every call goes to
     * @param descriptors their generated descriptors ({@code LocksGrpc.getServiceDescriptor()}): paths and types
     * @param tls the TLS it serves (HTTPS only); with a client CA, a client without a certificate of it is refused
     *     at the handshake, and a client's certificate names its identity; null = plain HTTP, every caller anonymous
     * @throws IOException when the port cannot be bound
     */
    public static ConnectHttpServer start(String host, int port, TlsMaterial tls,
            List<ServerServiceDefinition> definitions, List<ServiceDescriptor> descriptors) throws IOException {
        InetSocketAddress address = new InetSocketAddress(host, port);
        HttpServer server = HttpServers.bind(address, BACKLOG, tls);
        ConnectHttpServer http = new ConnectHttpServer(server, definitions, descriptors);
        server.createContext("/", http::handle);
        server.setExecutor(http.readers);
        server.start();
        return http;
    }

    /**
     * Makes the JDK's HTTP servers of this JVM send without Nagle's delay (unless a system property says otherwise):
     * its default writes a small answer's headers and body apart, and Nagle's algorithm then holds the body until the
     * client's delayed ACK, some 40 ms per call. The JDK reads the property once, when the first server is created:
     * every class that creates one calls this first.
     */
    public static void disableNagle() {
        if (System.getProperty(NO_DELAY_PROPERTY) == null) {
            System.setProperty(NO_DELAY_PROPERTY, "true");
        }
    }

    /** Returns the bound port. */
    public int port() {
        return server.getAddress().getPort();
    }

    private void handle(HttpExchange exchange) {
        try {
            ConnectRoute route = routes.get(exchange.getRequestURI().getPath());
            Request request = parseHeaders(exchange, route);
            if (request == null) {
                return; // answered
            }
            byte[] body = readBody(exchange);
            if (body == null) {
                return; // answered, or the connection is gone
            }
            call(exchange, request, body);
        } catch (RuntimeException e) {
            LOG.warn("HTTP request {} failed", exchange.getRequestURI().getPath(), e);
            answer(exchange, ConnectErrors.of(Status.Code.INTERNAL, "unexpected " + e.getClass().getSimpleName()));
        }
    }

    /** A call as its headers specify it. */
    private record Request(ConnectRoute route, boolean json, long timeoutMillis) {}

    /** Returns the call the headers specify, or null after answering a request that is not one. */
    private Request parseHeaders(HttpExchange exchange, ConnectRoute route) {
        String path = exchange.getRequestURI().getPath();
        if (!"POST".equals(exchange.getRequestMethod())) {
            exchange.getResponseHeaders().set("Allow", "POST");
            answer(exchange, 405, ConnectErrors.of(Status.Code.UNIMPLEMENTED, exchange.getRequestMethod() + " "
                    + path + ": the HTTP port serves POST only"));
            return null;
        }
        if (route == null) {
            answer(exchange, 404, ConnectErrors.of(Status.Code.UNIMPLEMENTED, "no method " + path + "; methods are "
                    + "POST /fencer.v1.Locks/<Method> and /fencer.v1.Store/<Method>"));
            return null;
        }
        if (!route.unary()) {
            answer(exchange, ConnectErrors.of(Status.Code.UNIMPLEMENTED, path + " is a streaming method, which the "
                    + "HTTP port does not serve (for sessions, call Renew every ttl/3)"));
            return null;
        }
        String contentType = mediaType(exchange.getRequestHeaders().getFirst("Content-Type"));
        if (!JSON.equals(contentType) && !PROTO.equals(contentType)) {
            exchange.getResponseHeaders().set("Accept-Post", JSON + ", " + PROTO);
            answer(exchange, 415, ConnectErrors.of(Status.Code.UNIMPLEMENTED, "content type '" + contentType
                    + "' is not served: use " + JSON + " or " + PROTO));
            return null;
        }
        String version = exchange.getRequestHeaders().getFirst("Connect-Protocol-Version");
        if (version != null && !"1".equals(version.trim())) {
            answer(exchange, ConnectErrors.of(Status.Code.INVALID_ARGUMENT, "Connect-Protocol-Version '" + version
                    + "' is not served: the HTTP port speaks version 1"));
            return null;
        }
        String encoding = exchange.getRequestHeaders().getFirst("Content-Encoding");
        if (encoding != null && !"identity".equalsIgnoreCase(encoding.trim())) {
            answer(exchange, ConnectErrors.of(Status.Code.UNIMPLEMENTED, "Content-Encoding '" + encoding
                    + "' is not served: the HTTP port supports identity only"));
            return null;
        }
        long timeoutMillis = timeoutMillis(exchange.getRequestHeaders().getFirst("Connect-Timeout-Ms"));
        if (timeoutMillis < 0) {
            answer(exchange, ConnectErrors.of(Status.Code.INVALID_ARGUMENT, "Connect-Timeout-Ms '"
                    + exchange.getRequestHeaders().getFirst("Connect-Timeout-Ms")
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

    /**
     * Reads the body, at most {@link #REQUEST_BODY_BYTES_MAX} bytes of it, within {@link #BODY_READ_MILLIS_MAX}.
     * Returns null after answering a body over the limit (whose rest is read and dropped, up to
     * {@link #DISCARDED_BYTES_MAX}, so that the client, still sending, gets to read the answer), or when the connection
     * was cut (by the client, or here when it took too long).
     */
    private byte[] readBody(HttpExchange exchange) {
        // Closing an exchange before its answer closes its connection, which ends a read blocked on it.
        ScheduledFuture<?> timeout = watchdog.schedule(exchange::close, BODY_READ_MILLIS_MAX, TimeUnit.MILLISECONDS);
        try {
            InputStream in = exchange.getRequestBody();
            byte[] body = in.readNBytes(REQUEST_BODY_BYTES_MAX + 1);
            if (body.length <= REQUEST_BODY_BYTES_MAX) {
                return body;
            }
            long dropped = 0;
            byte[] discarded = new byte[64 * 1024];
            for (int read = 0; read >= 0 && dropped < DISCARDED_BYTES_MAX; read = in.read(discarded)) {
                dropped += read;
            }
            timeout.cancel(false);
            answerTooLarge(exchange, REQUEST_BODY_BYTES_MAX + 1 + dropped);
            return null;
        } catch (IOException e) {
            LOG.debug("HTTP request body of {} not read", exchange.getRemoteAddress(), e);
            exchange.close();
            return null;
        } finally {
            timeout.cancel(false);
        }
    }

    private void answerTooLarge(HttpExchange exchange, long bytesRead) {
        LimitExceededException error = new LimitExceededException("httpRequestBodyBytesMax", REQUEST_BODY_BYTES_MAX,
                "the request body is over the HTTP port's limit of " + REQUEST_BODY_BYTES_MAX + " bytes (" + bytesRead
                        + " bytes read)");
        answer(exchange, ConnectErrors.of(WireErrors.toStatusException(error)));
    }

    /** Converts the body to the request's bytes and calls the method in-process; the answer comes back async. */
    private void call(HttpExchange exchange, Request request, byte[] body) {
        byte[] bytes;
        try {
            bytes = request.json() ? fromJson(request.route(), body) : body;
        } catch (FencerException e) {
            answer(exchange, ConnectErrors.of(WireErrors.toStatusException(e)));
            return;
        }
        CallOptions options = CallOptions.DEFAULT;
        if (request.timeoutMillis() > 0) {
            options = options.withDeadlineAfter(request.timeoutMillis(), TimeUnit.MILLISECONDS);
        }
        SSLSession session = exchange instanceof HttpsExchange https ? https.getSSLSession() : null;
        Channel caller = endpoint.channelFor(session, exchange.getRemoteAddress());
        ClientCalls.asyncUnaryCall(caller.newCall(request.route().method(), options), bytes,
                new Answer(exchange, request));
    }

    /** Returns the binary form of a JSON request, refusing malformed JSON, unknown fields and wrong types. */
    private static byte[] fromJson(ConnectRoute route, byte[] body) {
        Message.Builder builder = route.requestPrototype().newBuilderForType();
        // An empty body is the empty message, as in binary: `curl -d ''` for a request without fields.
        String json = body.length == 0 ? "{}" : new String(body, StandardCharsets.UTF_8);
        try {
            JSON_PARSER.merge(json, builder);
        } catch (InvalidProtocolBufferException | RuntimeException e) {
            // JsonFormat names the field or value, Gson the line, column and path; the body itself is not echoed.
            String field = offendingField(route, json);
            throw new InvalidArgumentException(field, "", "the " + route.path().substring(1)
                    + " request is not valid JSON of " + builder.getDescriptorForType().getFullName()
                    + (field.equals("body") ? "" : " in field '" + field + "'") + ": " + withoutClassName(e));
        }
        return builder.build().toByteArray();
    }

    /**
     * Returns the top-level field of a JSON object that does not parse as the request (JsonFormat's messages do not
     * always name it), or "body" when the body is no JSON object at all.
     */
    private static String offendingField(ConnectRoute route, String json) {
        JsonObject object;
        try {
            object = JsonParser.parseString(json).getAsJsonObject();
        } catch (RuntimeException e) {
            return "body";
        }
        for (Map.Entry<String, JsonElement> member : object.entrySet()) {
            JsonObject alone = new JsonObject();
            alone.add(member.getKey(), member.getValue());
            try {
                JSON_PARSER.merge(alone.toString(), route.requestPrototype().newBuilderForType());
            } catch (InvalidProtocolBufferException | RuntimeException e) {
                return member.getKey();
            }
        }
        return "body";
    }

    /** Returns a parser's message without the exception class names it may start with ("java.io.EOFException: "). */
    static String withoutClassName(Throwable error) {
        String message = String.valueOf(error.getMessage());
        return message.replaceFirst("^(?:[A-Za-z_$][\\w$]*\\.)+[A-Za-z_$][\\w$]*(?:Exception|Error): ", "");
    }

    /** Writes a call's answer: its message in the request's codec, or its Connect error. */
    private final class Answer implements StreamObserver<byte[]> {
        private final HttpExchange exchange;
        private final Request request;
        private byte[] response;

        Answer(HttpExchange exchange, Request request) {
            this.exchange = exchange;
            this.request = request;
        }

        @Override
        public void onNext(byte[] value) {
            response = value;
        }

        @Override
        public void onError(Throwable error) {
            answer(exchange, ConnectErrors.of(error));
        }

        @Override
        public void onCompleted() {
            try {
                if (!request.json()) {
                    send(exchange, 200, PROTO, response);
                    return;
                }
                Message message = request.route().responsePrototype().getParserForType().parseFrom(response);
                send(exchange, 200, JSON, (JSON_PRINTER.print(message) + "\n").getBytes(StandardCharsets.UTF_8));
            } catch (InvalidProtocolBufferException e) {
                answer(exchange, ConnectErrors.of(Status.Code.INTERNAL, "the answer does not parse: "
                        + e.getMessage()));
            }
        }
    }

    private static void answer(HttpExchange exchange, ConnectErrors.Answer error) {
        answer(exchange, error.httpStatus(), error);
    }

    private static void answer(HttpExchange exchange, int httpStatus, ConnectErrors.Answer error) {
        send(exchange, httpStatus, JSON, error.json().getBytes(StandardCharsets.UTF_8));
    }

    private static void send(HttpExchange exchange, int httpStatus, String contentType, byte[] body) {
        try (exchange) {
            exchange.getResponseHeaders().set("Content-Type", contentType);
            exchange.sendResponseHeaders(httpStatus, body.length == 0 ? -1 : body.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
        } catch (IOException e) {
            LOG.debug("HTTP answer to {} not written", exchange.getRemoteAddress(), e);
        }
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
        server.stop(0);
        endpoint.close();
        readers.shutdownNow();
        writers.shutdown(); // the calls the endpoint just cancelled still answer their clients
        watchdog.shutdownNow();
    }
}
