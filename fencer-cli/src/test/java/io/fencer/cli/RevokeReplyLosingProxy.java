package io.fencer.cli;

import io.fencer.api.v1.LocksGrpc;
import io.grpc.CallOptions;
import io.grpc.HandlerRegistry;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerMethodDefinition;
import io.grpc.Status;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.ClientCalls;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A gRPC proxy on an ephemeral port in front of one real server, for unary calls: it forwards each call's request to
 * the server as bytes and its answer back, except the first {@code Locks.Revoke}'s answer: that call is forwarded,
 * the server commits the revoke and answers, and the proxy drops the answer and fails the call UNAVAILABLE, as a
 * connection cut on the way back would. (The client may send its retry to the server directly: it learns the
 * server's address from the group's peer list.)
 */
final class RevokeReplyLosingProxy implements AutoCloseable {
    private static final String REVOKE = LocksGrpc.getRevokeMethod().getFullMethodName();
    private static final MethodDescriptor.Marshaller<byte[]> BYTES = new MethodDescriptor.Marshaller<>() {
        @Override
        public InputStream stream(byte[] value) {
            return new ByteArrayInputStream(value);
        }

        @Override
        public byte[] parse(InputStream stream) {
            try {
                return stream.readAllBytes();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    };

    private final ManagedChannel upstream;
    private final Server server;
    /** How many Revoke calls reached the proxy. */
    final AtomicInteger revokes = new AtomicInteger();
    /** How many Revoke answers of the server the proxy dropped. */
    final AtomicInteger repliesLost = new AtomicInteger();

    RevokeReplyLosingProxy(String upstreamEndpoint) throws IOException {
        this.upstream = NettyChannelBuilder.forTarget(upstreamEndpoint).usePlaintext().build();
        this.server = NettyServerBuilder.forPort(0).fallbackHandlerRegistry(new Forwarding()).build().start();
    }

    String endpoint() {
        return "127.0.0.1:" + server.getPort();
    }

    @Override
    public void close() throws InterruptedException {
        server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        upstream.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }

    /** Serves every method as unary, forwarding it. */
    private final class Forwarding extends HandlerRegistry {
        @Override
        public ServerMethodDefinition<?, ?> lookupMethod(String methodName, String authority) {
            MethodDescriptor<byte[], byte[]> method = MethodDescriptor.<byte[], byte[]>newBuilder()
                    .setType(MethodDescriptor.MethodType.UNARY).setFullMethodName(methodName)
                    .setRequestMarshaller(BYTES).setResponseMarshaller(BYTES).build();
            return ServerMethodDefinition.create(method, this::forward);
        }

        private ServerCall.Listener<byte[]> forward(ServerCall<byte[], byte[]> incoming, Metadata headers) {
            incoming.request(1);
            return new ServerCall.Listener<>() {
                @Override
                public void onMessage(byte[] request) {
                    answer(incoming, request);
                }
            };
        }

        private void answer(ServerCall<byte[], byte[]> incoming, byte[] request) {
            MethodDescriptor<byte[], byte[]> method = incoming.getMethodDescriptor();
            boolean revoke = method.getFullMethodName().equals(REVOKE);
            boolean first = revoke && revokes.incrementAndGet() == 1;
            byte[] answer;
            try {
                answer = ClientCalls.blockingUnaryCall(upstream, method, CallOptions.DEFAULT
                        .withDeadlineAfter(30, TimeUnit.SECONDS), request);
            } catch (RuntimeException failure) {
                Status status = Status.fromThrowable(failure);
                Metadata trailers = Status.trailersFromThrowable(failure);
                incoming.close(status, trailers == null ? new Metadata() : trailers);
                return;
            }
            if (first) {
                repliesLost.incrementAndGet();
                incoming.close(Status.UNAVAILABLE.withDescription("the proxy lost the reply"), new Metadata());
                return;
            }
            incoming.sendHeaders(new Metadata());
            incoming.sendMessage(answer);
            incoming.close(Status.OK, new Metadata());
        }
    }
}
