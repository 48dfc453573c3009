package io.fencer.server.raft;

import java.security.cert.Certificate;
import java.security.cert.CertificateParsingException;
import java.security.cert.X509Certificate;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLPeerUnverifiedException;
import org.apache.ratis.thirdparty.io.netty.buffer.ByteBuf;
import org.apache.ratis.thirdparty.io.netty.buffer.Unpooled;
import org.apache.ratis.thirdparty.io.netty.channel.ChannelFutureListener;
import org.apache.ratis.thirdparty.io.netty.channel.ChannelHandlerContext;
import org.apache.ratis.thirdparty.io.netty.channel.ChannelInboundHandlerAdapter;
import org.apache.ratis.thirdparty.io.netty.handler.ssl.SslHandler;
import org.apache.ratis.thirdparty.io.netty.handler.ssl.SslHandshakeCompletionEvent;
import org.apache.ratis.thirdparty.io.netty.util.ReferenceCountUtil;
import org.apache.ratis.thirdparty.io.netty.util.concurrent.ScheduledFuture;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The first handler of a connection on the Raft port, until the connection is admitted: it waits for the TLS
 * handshake and checks the peer's certificate (with TLS), then runs the listening side of the {@link PeerHandshake}
 * (with a group secret), reading at most a handshake's bytes; then it hands the connection to its {@link Gate}, which
 * installs the frame decoder, and leaves the pipeline. Anything else closes the connection: a failed TLS handshake,
 * a client certificate, bytes that are not a handshake or are too many, a wrong MAC, or no admission within the
 * deadline from the connection's start.
 */
final class PeerAdmission extends ChannelInboundHandlerAdapter {
    private static final Logger LOG = LoggerFactory.getLogger(PeerAdmission.class);
    /** The extended key usage of a TLS server certificate (RFC 5280), and "any purpose". */
    private static final List<String> PEER_KEY_USAGES = List.of("1.3.6.1.5.5.7.3.1", "2.5.29.37.0");

    /** Why the Raft port refused a connection: the metric's tag and the key of its log lines. */
    enum Refusal {
        /** The connections not yet admitted, or the admitted ones, were at their bound. */
        CONNECTIONS("connections"),
        /** The TLS handshake failed. */
        TLS("tls"),
        /** The TLS certificate is not a peer's server certificate. */
        CERTIFICATE("certificate"),
        /** The handshake failed: not a handshake, too long, another version, or no proof of the secret. */
        HANDSHAKE("handshake"),
        /** No admission within {@link PeerHandshake#TIMEOUT}. */
        LATE("late"),
        /** An admitted peer sent a frame whose body does not parse. */
        UNREADABLE("unreadable"),
        /** An admitted peer made a call (not a vote) as a peer that the group's current configuration does not hold. */
        NOT_MEMBER("not-member");

        final String tag;

        Refusal(String tag) {
            this.tag = tag;
        }
    }

    /** Where an admission goes: the owner of the Raft port. */
    interface Gate {
        /**
         * Takes over an admitted connection (installs what reads its frames); returns false when it may not stay,
         * having logged why.
         *
         * @param peerId the peer id the handshake proved, or null without a group secret
         */
        boolean admit(ChannelHandlerContext context, String peerId);

        /** Logs (at most once per interval per remote address) and counts a refused connection. */
        void refuse(Refusal refusal, ChannelHandlerContext context, String why);
    }

    private final PeerHandshake handshake;
    private final boolean tls;
    private final Duration timeout;
    private final Gate gate;
    private PeerHandshake.Listening listening;
    private ScheduledFuture<?> deadline;
    private boolean ended;

    /**
     * @param handshake the handshake peers must pass, or null when the group has no secret (TLS alone, or nothing
     *     with {@code --insecure-raft})
     * @param tls true when the pipeline's TLS handler, before this one, must complete first
     */
    PeerAdmission(PeerHandshake handshake, boolean tls, Duration timeout, Gate gate) {
        this.handshake = handshake;
        this.tls = tls;
        this.timeout = timeout;
        this.gate = gate;
    }

    @Override
    public void handlerAdded(ChannelHandlerContext context) {
        deadline = context.executor().schedule(() -> late(context), timeout.toNanos(), TimeUnit.NANOSECONDS);
    }

    @Override
    public void channelActive(ChannelHandlerContext context) throws Exception {
        if (!tls) {
            start(context);
        }
        super.channelActive(context);
    }

    @Override
    public void userEventTriggered(ChannelHandlerContext context, Object event) throws Exception {
        if (event instanceof SslHandshakeCompletionEvent completion && !ended) {
            if (!completion.isSuccess()) {
                refuse(context, Refusal.TLS, "its TLS handshake failed: " + PeerTrust.refusal(completion.cause()));
            } else {
                String refusal = certificateRefusal(context);
                if (refusal == null) {
                    start(context);
                } else {
                    refuse(context, Refusal.CERTIFICATE, refusal);
                }
            }
        }
        super.userEventTriggered(context, event);
    }

    private void start(ChannelHandlerContext context) {
        if (handshake == null) {
            admit(context, null);
            return;
        }
        listening = handshake.listening();
        context.writeAndFlush(Unpooled.wrappedBuffer(listening.hello()));
    }

    @Override
    public void channelRead(ChannelHandlerContext context, Object message) {
        try {
            if (ended) {
                return; // closing: what still comes is dropped
            }
            if (listening == null || !(message instanceof ByteBuf bytes)) {
                refuse(context, Refusal.HANDSHAKE, "it sent bytes before this peer's HELLO");
                return;
            }
            byte[] answer = listening.receive(bytes);
            if (answer != null) {
                context.writeAndFlush(Unpooled.wrappedBuffer(answer));
                admit(context, listening.peerId());
            }
        } catch (PeerHandshake.Failure failure) {
            if (failure.answer != null) {
                context.writeAndFlush(Unpooled.wrappedBuffer(failure.answer));
            }
            refuse(context, Refusal.HANDSHAKE, failure.getMessage()
                    + (failure.reason == PeerHandshake.Reason.BAD_PROOF
                    ? " (is --raft-secret-file the same file on every peer?)" : ""));
        } finally {
            ReferenceCountUtil.release(message);
        }
    }

    private void admit(ChannelHandlerContext context, String peerId) {
        ended = true;
        deadline.cancel(false);
        if (gate.admit(context, peerId)) {
            context.pipeline().remove(this);
        } else {
            context.close();
        }
    }

    private void late(ChannelHandlerContext context) {
        if (!ended) {
            refuse(context, Refusal.LATE, "it was not admitted within " + timeout.toMillis() + " ms of its start"
                    + (handshake == null ? "" : " (no valid handshake came)"));
        }
    }

    private void refuse(ChannelHandlerContext context, Refusal refusal, String why) {
        if (ended) {
            return;
        }
        ended = true;
        deadline.cancel(false);
        gate.refuse(refusal, context, why);
        // What was written (a refusal's status byte) leaves before the close.
        context.writeAndFlush(Unpooled.EMPTY_BUFFER).addListener(ChannelFutureListener.CLOSE);
    }

    @Override
    public void exceptionCaught(ChannelHandlerContext context, Throwable cause) {
        LOG.debug("a Raft connection from {} ends before its admission: {}", context.channel().remoteAddress(),
                cause.toString());
        context.close();
    }

    @Override
    public void channelInactive(ChannelHandlerContext context) throws Exception {
        ended = true;
        if (deadline != null) {
            deadline.cancel(false);
        }
        super.channelInactive(context);
    }

    /** Returns why the TLS peer's certificate is not a peer's server certificate, or null when it is one. */
    private static String certificateRefusal(ChannelHandlerContext context) {
        SslHandler tls = context.pipeline().get(SslHandler.class);
        try {
            Certificate[] chain = tls.engine().getSession().getPeerCertificates();
            X509Certificate leaf = (X509Certificate) chain[0];
            List<String> usages = leaf.getExtendedKeyUsage();
            if (usages == null || usages.stream().anyMatch(PEER_KEY_USAGES::contains)) {
                return null;
            }
            return "its certificate '" + leaf.getSubjectX500Principal().getName() + "' is not a server "
                    + "certificate (extended key usage " + usages + "): peers present their server certificate";
        } catch (SSLPeerUnverifiedException | CertificateParsingException e) {
            return "its certificate cannot be checked: " + e;
        }
    }
}
