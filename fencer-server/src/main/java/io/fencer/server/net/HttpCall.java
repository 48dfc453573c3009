package io.fencer.server.net;

import io.netty.handler.codec.http.HttpRequest;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.net.ssl.SSLSession;

/**
 * One request of an {@link HttpPort}, its body read, and the way to answer it (once, from any thread).
 */
public final class HttpCall {
    /** Why a body was not kept whole. */
    public enum Overflow {
        /** The body was kept whole. */
        NONE,
        /** The body is over {@link HttpPort.Settings#requestBodyBytesMax()}. */
        REQUEST_BODY,
        /** The port keeps {@link HttpPort.Settings#bodiesBytesMax()} of bodies already: this one could not wait. */
        PORT_BODIES
    }

    private final HttpConnection connection;
    private final HttpRequest request;
    private final String path;
    private final byte[] body;
    private final long bodyBytesRead;
    private final Overflow overflow;
    private final SSLSession tlsSession;
    private final InetSocketAddress remoteAddress;
    private final AtomicBoolean answered = new AtomicBoolean();
    private volatile Runnable onClose;

    HttpCall(HttpConnection connection, HttpRequest request, byte[] body, long bodyBytesRead, Overflow overflow,
            SSLSession tlsSession, InetSocketAddress remoteAddress) {
        this.connection = connection;
        this.request = request;
        this.path = path(request.uri());
        this.body = body;
        this.bodyBytesRead = bodyBytesRead;
        this.overflow = overflow;
        this.tlsSession = tlsSession;
        this.remoteAddress = remoteAddress;
    }

    /** Returns the path of a request target, %-escapes decoded, without its query; the target itself if no URI. */
    static String path(String target) {
        try {
            String path = new URI(target).getPath();
            return path == null ? "" : path;
        } catch (URISyntaxException e) {
            return target;
        }
    }

    /** Returns the method, e.g. "POST". */
    public String method() {
        return request.method().name();
    }

    /** Returns the path, %-escapes decoded, e.g. "/fencer.v1.Locks/Acquire". */
    public String path() {
        return path;
    }

    /** Returns the first value of the header {@code name} (any case), or null. */
    public String header(String name) {
        return request.headers().get(name);
    }

    /** Returns the body; empty when it overflowed (see {@link #overflow()}). */
    public byte[] body() {
        return body;
    }

    /** Returns how many bytes of body were read, kept or dropped. */
    public long bodyBytesRead() {
        return bodyBytesRead;
    }

    public Overflow overflow() {
        return overflow;
    }

    /** Returns the TLS session the request came on (its verified client certificate), or null for plaintext. */
    public SSLSession tlsSession() {
        return tlsSession;
    }

    public InetSocketAddress remoteAddress() {
        return remoteAddress;
    }

    /** Answers with {@code body} (none for a HEAD request: its length only). The first answer counts. */
    public void answer(int status, String contentType, byte[] body) {
        answer(status, contentType, body, Map.of());
    }

    /** Answers with {@code body} and the extra {@code headers}. The first answer counts; later ones are ignored. */
    public void answer(int status, String contentType, byte[] body, Map<String, String> headers) {
        if (answered.compareAndSet(false, true)) {
            connection.answer(this, status, contentType, body, headers);
        }
    }

    /** Returns true once an answer was given (it may not be written yet). */
    public boolean answered() {
        return answered.get();
    }

    /**
     * Runs {@code listener} on the connection's event loop when the connection closes before the answer is
     * written: the client gave up (or timed out), so the work for it may stop.
     */
    public void onClose(Runnable listener) {
        onClose = listener;
    }

    /** Tells the call its connection closed before its answer was written. */
    void closedUnanswered() {
        Runnable listener = onClose;
        if (listener != null) {
            listener.run();
        }
    }

    HttpRequest request() {
        return request;
    }
}
