package io.fencer.server.rpc;

import io.fencer.server.net.ConnectionCaps;
import io.grpc.netty.shaded.io.netty.channel.Channel;
import io.grpc.netty.shaded.io.netty.channel.ChannelHandlerContext;
import io.grpc.netty.shaded.io.netty.channel.ChannelInboundHandlerAdapter;
import java.net.InetAddress;

/**
 * The handler of the gRPC port's listening channel (gRPC's shaded Netty), which sees each accepted connection
 * before gRPC does: one over the port's {@link ConnectionCaps} is closed there, unread, before its TLS handshake or
 * HTTP/2 preface; one within them is counted until it closes. It sits in the listening channel's pipeline ahead of
 * Netty's acceptor, which {@link GrpcEndpoints} arranges by making the channel itself.
 */
final class GrpcAcceptGate extends ChannelInboundHandlerAdapter {
    private final ConnectionCaps caps;

    GrpcAcceptGate(ConnectionCaps caps) {
        this.caps = caps;
    }

    @Override
    public void channelRead(ChannelHandlerContext ctx, Object message) {
        Channel child = (Channel) message;
        InetAddress address = ConnectionCaps.addressOf(child.remoteAddress());
        if (!caps.tryOpen(address)) {
            child.unsafe().closeForcibly();
            return;
        }
        child.closeFuture().addListener(closed -> caps.closed(address));
        ctx.fireChannelRead(child);
    }
}
