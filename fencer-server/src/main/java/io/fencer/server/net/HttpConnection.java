package io.fencer.server.net;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelHandler;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.handler.codec.DecoderResult;
import io.netty.handler.codec.http.DefaultFullHttpResponse;
import io.netty.handler.codec.http.FullHttpResponse;
import io.netty.handler.codec.http.HttpContent;
import io.netty.handler.codec.http.HttpHeaderNames;
import io.netty.handler.codec.http.HttpMethod;
import io.netty.handler.codec.http.HttpRequest;
import io.netty.handler.codec.http.HttpResponseStatus;
import io.netty.handler.codec.http.HttpUtil;
import io.netty.handler.codec.http.HttpVersion;
import io.netty.handler.codec.http.LastHttpContent;
import io.netty.handler.codec.http.TooLongHttpHeaderException;
import io.netty.handler.codec.http.TooLongHttpLineException;
import io.netty.handler.ssl.SslHandler;
import io.netty.handler.ssl.SslHandshakeCompletionEvent;
import io.netty.handler.ssl.SslHandshakeTimeoutException;
import io.netty.util.ReferenceCountUtil;
import java.io.ByteArrayOutputStream;
import java.util.ArrayDeque;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import javax.net.ssl.SSLSession;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One connection of an {@link HttpPort}: it reads one request at a time (automatic reads are off; it asks for the
 * next message only while it waits for one), keeps its body within the port's bounds, hands it to the port's
 * handler, writes the answer, and closes the connection when the client is too slow.
 *
 * <p>Its phases, each with its own deadline: {@code HANDSHAKE} (TLS, the SslHandler's), {@code HEADERS} (the request
 * line and headers, within the header-read timeout of their first byte), {@code BODY} (within the body-read timeout
 * of the headers), {@code CALL} (no deadline: an Acquire may wait an hour, and nothing is read meanwhile),
 * {@code ANSWER} (the client takes the answer within the idle timeout), {@code IDLE} (a keep-alive connection, within
 * the idle timeout). All of its state is touched on its event loop only.
 */
final class HttpConnection extends ChannelInboundHandlerAdapter {
    private static final Logger LOG = LoggerFactory.getLogger(HttpConnection.class);
    /**
     * The most decoded messages kept while a call runs: a read asked for before the call can bring a pipelined
     * request along, which waits its turn; a client pipelining more than this is not one to serve.
     */
    static final int PENDING_MESSAGES_MAX = 64;
    /** The most a body's buffer takes at first; it grows with the bytes that arrive. */
    private static final int INITIAL_BODY_BYTES_MAX = 64 * 1024;

    /** Where the connection is in its request cycle. */
    enum Phase { HANDSHAKE, HEADERS, BODY, CALL, ANSWER, IDLE, CLOSED }

    private final HttpPort.Settings settings;
    private final PortLimits limits;
    private final ConnectionCaps caps;
    private final AtomicLong portBodiesBytes;
    private final HttpPort.Handler handler;
    private ChannelHandlerContext context;
    private Phase phase;
    private ScheduledFuture<?> deadline;
    private HttpRequest request;
    private ByteArrayOutputStream body;
    private long bodyBytesRead;
    /** Body bytes counted against the port's {@link HttpPort.Settings#bodiesBytesMax()}, given back at the answer. */
    private long bodyBytesReserved;
    private HttpCall.Overflow overflow;
    private HttpCall call;
    /** Messages decoded while a call ran (a pipelined request), processed in order once it is answered. */
    private final ArrayDeque<Object> pending = new ArrayDeque<>();

    HttpConnection(HttpPort.Settings settings, PortLimits limits, ConnectionCaps caps, AtomicLong portBodiesBytes,
            HttpPort.Handler handler, boolean tls) {
        this.settings = settings;
        this.limits = limits;
        this.caps = caps;
        this.portBodiesBytes = portBodiesBytes;
        this.handler = handler;
        this.phase = tls ? Phase.HANDSHAKE : Phase.HEADERS;
    }

    /**
     * Returns the handler placed before the HTTP codec (after TLS): it sees a request's first bytes arrive, which
     * start its header-read deadline on a keep-alive connection.
     */
    ChannelHandler firstBytes() {
        return new ChannelInboundHandlerAdapter() {
            @Override
            public void channelRead(ChannelHandlerContext ctx, Object message) {
                if (phase == Phase.IDLE) {
                    enter(Phase.HEADERS, limits.headerReadTimeout());
                }
                ctx.fireChannelRead(message);
            }
        };
    }

    @Override
    public void handlerAdded(ChannelHandlerContext ctx) {
        context = ctx;
    }

    @Override
    public void channelActive(ChannelHandlerContext ctx) {
        if (phase == Phase.HEADERS) {
            enter(Phase.HEADERS, limits.headerReadTimeout());
        } // under TLS, the handshake has its own timeout (the SslHandler's); the headers' starts after it
        ctx.read();
        ctx.fireChannelActive();
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext ctx, Object event) {
        if (event instanceof SslHandshakeCompletionEvent handshake) {
            if (handshake.isSuccess()) {
                enter(Phase.HEADERS, limits.headerReadTimeout());
            } else if (handshake.cause() instanceof SslHandshakeTimeoutException) {
                caps.timedOut(remoteAddress(), "handshake", "handshakeTimeout", limits.handshakeTimeout());
            } else {
                LOG.debug("{} port: TLS handshake with {} failed", settings.name(), remoteAddress(),
                        handshake.cause());
            }
        }
        ctx.fireUserEventTriggered(event);
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object message) {
        if (phase == Phase.CLOSED) {
            ReferenceCountUtil.release(message);
        } else if (phase == Phase.CALL || phase == Phase.ANSWER || !pending.isEmpty()) {
            // A pipelined request (or what a read asked for before the call brought along): it waits its turn.
            pending.add(message);
            if (pending.size() > PENDING_MESSAGES_MAX) {
                LOG.debug("{} port: {} pipelined more than {} messages; closed", settings.name(), remoteAddress(),
                        PENDING_MESSAGES_MAX);
                ctx.close();
            }
        } else {
            process(message);
        }
    }

    /** Takes one message of the request being read; asks for the next one unless the request is complete. */
    private void process(Object message) {
        try {
            if (message instanceof HttpRequest headers) {
                if (phase == Phase.IDLE) {
                    enter(Phase.HEADERS, limits.headerReadTimeout()); // its first bytes were decoded with others
                }
                requestHeaders(headers);
            }
            if (message instanceof HttpContent content && phase == Phase.BODY) {
                bodyPart(content);
            }
        } finally {
            ReferenceCountUtil.release(message);
        }
        if (phase == Phase.HEADERS || phase == Phase.BODY) {
            context.read();
        }
    }

    /** Takes the messages that waited for the answer just written, then asks for more if they did not suffice. */
    private void resume() {
        while (!pending.isEmpty() && (phase == Phase.IDLE || phase == Phase.HEADERS || phase == Phase.BODY)) {
            process(pending.poll());
        }
        if (phase == Phase.IDLE) {
            context.read();
        }
    }

    private void requestHeaders(HttpRequest headers) {
        if (headers.decoderResult().isFailure()) {
            refuseUnreadable(headers.decoderResult());
            return;
        }
        request = headers;
        if (HttpUtil.is100ContinueExpected(headers)) {
            // Sent here, when this request's turn has come, so that it never precedes an earlier request's answer.
            headers.headers().remove(HttpHeaderNames.EXPECT);
            context.writeAndFlush(new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, HttpResponseStatus.CONTINUE));
        }
        // Sized by what the client announces, within a small bound: an announced length is no promise.
        long announced = HttpUtil.getContentLength(headers, 0L);
        body = new ByteArrayOutputStream((int) Math.max(0, Math.min(announced, INITIAL_BODY_BYTES_MAX)));
        bodyBytesRead = 0;
        overflow = HttpCall.Overflow.NONE;
        enter(Phase.BODY, limits.bodyReadTimeout());
    }

    private void bodyPart(HttpContent content) {
        if (content.decoderResult().isFailure()) {
            refuseUnreadable(content.decoderResult());
            return;
        }
        ByteBuf bytes = content.content();
        int length = bytes.readableBytes();
        bodyBytesRead += length;
        if (overflow == HttpCall.Overflow.NONE && length > 0) {
            keep(bytes, length);
        }
        if (overflow != HttpCall.Overflow.NONE && bodyBytesRead - body.size() > settings.discardedBytesMax()) {
            // The client keeps sending a body nobody reads: answer now and close rather than read on forever.
            dispatch(false);
            return;
        }
        if (content instanceof LastHttpContent) {
            dispatch(true);
        }
    }

    /** Keeps a piece of body within the request's and the port's bounds, or marks the overflow and drops it all. */
    private void keep(ByteBuf bytes, int length) {
        if (bodyBytesRead > settings.requestBodyBytesMax()) {
            overflow = HttpCall.Overflow.REQUEST_BODY;
        } else if (portBodiesBytes.addAndGet(length) > settings.bodiesBytesMax()) {
            portBodiesBytes.addAndGet(-length);
            overflow = HttpCall.Overflow.PORT_BODIES;
        } else {
            bodyBytesReserved += length;
            byte[] piece = new byte[length];
            bytes.readBytes(piece);
            body.write(piece, 0, length);
            return;
        }
        giveBackBodyBytes();
        body = new ByteArrayOutputStream(0);
    }

    /** Hands the request, its body read, to the handler; {@code keepAlive} false closes after the answer. */
    private void dispatch(boolean keepAlive) {
        enter(Phase.CALL, null);
        SslHandler tls = context.pipeline().get(SslHandler.class);
        SSLSession session = tls == null ? null : tls.engine().getSession();
        if (!keepAlive) {
            HttpUtil.setKeepAlive(request, false);
        }
        HttpCall current = new HttpCall(this, request, body.toByteArray(), bodyBytesRead, overflow, session,
                remoteAddress());
        call = current;
        body = null;
        try {
            handler.handle(current);
        } catch (RuntimeException e) {
            LOG.warn("{} port: request {} {} failed", settings.name(), current.method(), current.path(), e);
            current.answer(500, "text/plain; charset=utf-8", ("internal error: " + e.getClass().getSimpleName()
                    + "\n").getBytes(StandardCharsets.UTF_8));
        }
    }

    /** Answers a request the codec could not read (too long a line or headers, malformed), and closes. */
    private void refuseUnreadable(DecoderResult result) {
        Throwable cause = result.cause();
        HttpResponseStatus status = cause instanceof TooLongHttpLineException ? HttpResponseStatus.REQUEST_URI_TOO_LONG
                : cause instanceof TooLongHttpHeaderException ? HttpResponseStatus.REQUEST_HEADER_FIELDS_TOO_LARGE
                : HttpResponseStatus.BAD_REQUEST;
        byte[] text = ("unreadable request: " + cause.getMessage() + "\n").getBytes(StandardCharsets.UTF_8);
        FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1, status,
                Unpooled.wrappedBuffer(text));
        response.headers().set(HttpHeaderNames.CONTENT_TYPE, "text/plain; charset=utf-8")
                .setInt(HttpHeaderNames.CONTENT_LENGTH, text.length);
        write(response, false);
    }

    /** Writes {@code call}'s answer on the event loop; called once per call, from any thread. */
    void answer(HttpCall answered, int status, String contentType, byte[] bytes, Map<String, String> headers) {
        if (!context.executor().inEventLoop()) {
            context.executor().execute(() -> answer(answered, status, contentType, bytes, headers));
            return;
        }
        if (answered != call || phase != Phase.CALL) {
            return; // the connection closed meanwhile
        }
        call = null;
        giveBackBodyBytes();
        boolean head = HttpMethod.HEAD.equals(answered.request().method());
        FullHttpResponse response = new DefaultFullHttpResponse(HttpVersion.HTTP_1_1,
                HttpResponseStatus.valueOf(status), head ? Unpooled.EMPTY_BUFFER : Unpooled.wrappedBuffer(bytes));
        headers.forEach(response.headers()::set);
        response.headers().set(HttpHeaderNames.CONTENT_TYPE, contentType)
                .setInt(HttpHeaderNames.CONTENT_LENGTH, bytes.length);
        write(response, HttpUtil.isKeepAlive(answered.request()));
    }

    /**
     * Writes an answer, which the client must take within the idle timeout (one that stops reading holds its
     * connection that long, not forever), then reads the next request or closes.
     */
    private void write(FullHttpResponse response, boolean keepAlive) {
        HttpUtil.setKeepAlive(response, keepAlive);
        enter(Phase.ANSWER, limits.httpIdleTimeout());
        context.writeAndFlush(response).addListener((ChannelFutureListener) written -> {
            if (!keepAlive || !written.isSuccess()) {
                written.channel().close();
                return;
            }
            enter(Phase.IDLE, limits.httpIdleTimeout());
            resume();
        });
    }

    /** Moves to {@code next}, replacing the deadline with one {@code timeout} from now (none when null). */
    private void enter(Phase next, Duration timeout) {
        if (phase == Phase.CLOSED) {
            return;
        }
        phase = next;
        if (deadline != null) {
            deadline.cancel(false);
            deadline = null;
        }
        if (timeout != null) {
            deadline = context.executor().schedule(() -> expire(next), timeout.toNanos(), TimeUnit.NANOSECONDS);
        }
    }

    private void expire(Phase expired) {
        if (phase != expired) {
            return;
        }
        switch (expired) {
            case HEADERS -> caps.timedOut(remoteAddress(), "headers", "headerReadTimeout",
                    limits.headerReadTimeout());
            case BODY -> caps.timedOut(remoteAddress(), "body", "bodyReadTimeout", limits.bodyReadTimeout());
            case ANSWER -> caps.timedOut(remoteAddress(), "answer", "httpIdleTimeout", limits.httpIdleTimeout());
            default -> LOG.trace("{} port: idle connection from {} closed", settings.name(), remoteAddress());
        }
        context.close();
    }

    private void giveBackBodyBytes() {
        portBodiesBytes.addAndGet(-bodyBytesReserved);
        bodyBytesReserved = 0;
    }

    private InetSocketAddress remoteAddress() {
        return context == null ? null : (InetSocketAddress) context.channel().remoteAddress();
    }

    @Override
    public void channelInactive(ChannelHandlerContext ctx) {
        Phase was = phase;
        enter(Phase.CLOSED, null);
        giveBackBodyBytes();
        pending.forEach(ReferenceCountUtil::release);
        pending.clear();
        HttpCall unanswered = call;
        call = null;
        if (was == Phase.CALL && unanswered != null) {
            unanswered.closedUnanswered();
        }
        ctx.fireChannelInactive();
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext ctx, Throwable cause) {
        // A reset, a TLS alert, a client that went away: the connection is done, the port is not.
        LOG.debug("{} port: connection from {} failed", settings.name(), remoteAddress(), cause);
        ctx.close();
    }
}
