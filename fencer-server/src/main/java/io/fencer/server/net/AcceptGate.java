package io.fencer.server.net;

import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import java.net.InetAddress;

/**
 * The handler of an {@link HttpPort}'s listening channel, which sees each accepted connection before it is
 * registered with an event loop: one over the port's {@link ConnectionCaps} is closed there, unread, before its TLS
 * handshake; one within them is counted until it closes.
 */
final class AcceptGate extends ChannelInboundHandlerAdapter {
    private final ConnectionCaps caps;

    AcceptGate(ConnectionCaps caps) {
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
