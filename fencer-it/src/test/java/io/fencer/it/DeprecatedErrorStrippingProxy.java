package io.fencer.it;

import com.google.protobuf.InvalidProtocolBufferException;
import io.fencer.api.errors.WireErrors;
import io.fencer.api.v1.CallError;
import io.fencer.api.v1.StoreGrpc;
import io.fencer.api.v1.StorePipelineResponse;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ClientInterceptors;
import io.grpc.Context;
import io.grpc.ForwardingClientCall;
import io.grpc.ForwardingClientCallListener;
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
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A gRPC proxy on an ephemeral port in front of one real server, which hides from its clients everything Fencer
 * sends for clients of the previous release: a client interceptor on the proxy's channel to the server drops the
 * deprecated trailer {@code fencer-error-bin} and, on {@code Store.Pipeline}, a {@link CallError}'s deprecated
 * fields, keeping only {@code CallError.status}. A client behind it has the standard error model alone.
 *
 * <p>Calls are forwarded as bytes, message by message, whatever the method; {@code Store.Pipeline} may be
 * answered UNIMPLEMENTED instead, so that the Java client sends its writes as unary calls.
 */
final class DeprecatedErrorStrippingProxy implements AutoCloseable {
    private static final String STORE_PIPELINE = StoreGrpc.getPipelineMethod().getFullMethodName();
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
    private final Channel stripped;
    private final boolean servesPipeline;
    private final Server server;
    /** How many failed calls arrived with the deprecated trailer, which was dropped. */
    final AtomicInteger deprecatedTrailersDropped = new AtomicInteger();
    /** How many CallErrors arrived with their deprecated fields set, which were cleared. */
    final AtomicInteger deprecatedCallErrorsCleared = new AtomicInteger();
    /** How many Store.Pipeline calls were forwarded to the server. */
    final AtomicInteger pipelinesForwarded = new AtomicInteger();

    private DeprecatedErrorStrippingProxy(int upstreamPort, boolean servesPipeline) throws IOException {
        this.upstream = NettyChannelBuilder.forAddress("127.0.0.1", upstreamPort).usePlaintext().build();
        this.stripped = ClientInterceptors.intercept(upstream, new DropDeprecated());
        this.servesPipeline = servesPipeline;
        this.server = NettyServerBuilder.forPort(0).fallbackHandlerRegistry(new Forwarding()).build().start();
    }

    /**
     * Starts a proxy to the server on {@code upstreamPort}; {@code servesPipeline} false answers Store.Pipeline
     * UNIMPLEMENTED, as a server without it would.
     */
    static DeprecatedErrorStrippingProxy start(int upstreamPort, boolean servesPipeline) throws IOException {
        return new DeprecatedErrorStrippingProxy(upstreamPort, servesPipeline);
    }

    String endpoint() {
        return "127.0.0.1:" + server.getPort();
    }

    @Override
    public void close() {
        try {
            server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            upstream.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Serves every method by forwarding it. */
    private final class Forwarding extends HandlerRegistry {
        @Override
        public ServerMethodDefinition<?, ?> lookupMethod(String methodName, String authority) {
            MethodDescriptor<byte[], byte[]> method = MethodDescriptor.<byte[], byte[]>newBuilder()
                    .setType(MethodDescriptor.MethodType.UNKNOWN).setFullMethodName(methodName)
                    .setRequestMarshaller(BYTES).setResponseMarshaller(BYTES).build();
            return ServerMethodDefinition.create(method, this::forward);
        }

        private ServerCall.Listener<byte[]> forward(ServerCall<byte[], byte[]> incoming, Metadata headers) {
            String methodName = incoming.getMethodDescriptor().getFullMethodName();
            if (methodName.equals(STORE_PIPELINE)) {
                if (!servesPipeline) {
                    incoming.close(Status.UNIMPLEMENTED.withDescription("this proxy serves no Pipeline"),
                            new Metadata());
                    return new ServerCall.Listener<>() {};
                }
                pipelinesForwarded.incrementAndGet();
            }
            CallOptions options = Context.current().getDeadline() == null ? CallOptions.DEFAULT
                    : CallOptions.DEFAULT.withDeadline(Context.current().getDeadline());
            ClientCall<byte[], byte[]> outgoing = stripped.newCall(incoming.getMethodDescriptor(), options);
            outgoing.start(new Answering(incoming, outgoing), headers);
            outgoing.request(1);
            incoming.request(1);
            return new ServerCall.Listener<>() {
                @Override
                public void onMessage(byte[] message) {
                    synchronized (outgoing) {
                        outgoing.sendMessage(message);
                    }
                    incoming.request(1);
                }

                @Override
                public void onHalfClose() {
                    synchronized (outgoing) {
                        outgoing.halfClose();
                    }
                }

                @Override
                public void onCancel() {
                    synchronized (outgoing) {
                        outgoing.cancel("the proxy's client cancelled", null);
                    }
                }
            };
        }
    }

    /** Passes the server's answers back to the proxy's client. */
    private static final class Answering extends ClientCall.Listener<byte[]> {
        private final ServerCall<byte[], byte[]> incoming;
        private final ClientCall<byte[], byte[]> outgoing;

        Answering(ServerCall<byte[], byte[]> incoming, ClientCall<byte[], byte[]> outgoing) {
            this.incoming = incoming;
            this.outgoing = outgoing;
        }

        @Override
        public void onHeaders(Metadata headers) {
            incoming.sendHeaders(headers);
        }

        @Override
        public void onMessage(byte[] message) {
            incoming.sendMessage(message);
            synchronized (outgoing) {
                outgoing.request(1);
            }
        }

        @Override
        public void onClose(Status status, Metadata trailers) {
            incoming.close(status, trailers);
        }
    }

    /** The client interceptor that drops what Fencer sends only for clients of the previous release. */
    @SuppressWarnings("deprecation") // drops the deprecated trailer on purpose
    private final class DropDeprecated implements ClientInterceptor {
        @Override
        public <RequestT, ResponseT> ClientCall<RequestT, ResponseT> interceptCall(
                MethodDescriptor<RequestT, ResponseT> method, CallOptions options, Channel next) {
            boolean pipeline = method.getFullMethodName().equals(STORE_PIPELINE);
            return new ForwardingClientCall.SimpleForwardingClientCall<>(next.newCall(method, options)) {
                @Override
                public void start(Listener<ResponseT> listener, Metadata headers) {
                    super.start(new ForwardingClientCallListener.SimpleForwardingClientCallListener<>(listener) {
                        @Override
                        public void onMessage(ResponseT message) {
                            super.onMessage(pipeline ? withoutDeprecatedFields(message) : message);
                        }

                        @Override
                        public void onClose(Status status, Metadata trailers) {
                            if (trailers.containsKey(WireErrors.DETAIL_KEY)) {
                                trailers.discardAll(WireErrors.DETAIL_KEY);
                                deprecatedTrailersDropped.incrementAndGet();
                            }
                            super.onClose(status, trailers);
                        }
                    }, headers);
                }
            };
        }

        @SuppressWarnings("unchecked") // the proxy's messages are bytes
        private <ResponseT> ResponseT withoutDeprecatedFields(ResponseT message) {
            try {
                StorePipelineResponse response = StorePipelineResponse.parseFrom((byte[]) message);
                if (!response.hasError()) {
                    return message;
                }
                CallError error = response.getError();
                if (error.getStatusCode() != 0 && !error.getDescription().isEmpty() && error.hasDetail()) {
                    deprecatedCallErrorsCleared.incrementAndGet();
                }
                CallError standardOnly = CallError.newBuilder().setStatus(error.getStatus()).build();
                return (ResponseT) response.toBuilder().setError(standardOnly).build().toByteArray();
            } catch (InvalidProtocolBufferException e) {
                throw new IllegalStateException("the server sent an unparsable StorePipelineResponse", e);
            }
        }
    }
}
