package io.fencer.server.rpc;

import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ClientInterceptors;
import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.ForwardingClientCall;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import java.io.IOException;
import java.net.SocketAddress;
import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Executor;
import javax.net.ssl.SSLSession;

/**
 * The gRPC services of a Fencer process, hosted a second time on an in-process server (reachable only from inside
 * this JVM, under a random name), for the HTTP port: each HTTP call becomes a call of the very same service
 * definitions, with the same guards, interceptors, checks, limits and error catalogue as the gRPC port's.
 *
 * <p>Identity: the HTTP port verifies the client certificate in its own TLS handshake, and {@link #channelFor}
 * carries the certificate's common name to this server in a header that only this server reads, with the HTTP
 * client's network address (which the quotas of an anonymous caller count, {@link Identities#quotaIdentity()}) in
 * another. The gRPC port never reads them ({@link Identities#interceptor()} takes the identity from the TLS session
 * and the address from the connection alone), and the HTTP port forwards no header of its clients, so no external
 * caller can set them.
 */
public final class InProcessEndpoint implements AutoCloseable {
    private static final Metadata.Key<String> IDENTITY =
            Metadata.Key.of("fencer-in-process-identity", Metadata.ASCII_STRING_MARSHALLER);
    /** The HTTP client's address, for the quotas of an anonymous caller (see {@link Identities#quotaIdentity()}). */
    private static final Metadata.Key<String> ADDRESS =
            Metadata.Key.of("fencer-in-process-address", Metadata.ASCII_STRING_MARSHALLER);

    private final Server server;
    private final ManagedChannel channel;

    private InProcessEndpoint(Server server, ManagedChannel channel) {
        this.server = server;
        this.channel = channel;
    }

    /**
     * Starts an in-process server hosting {@code services} (as built for the gRPC port, before its identity
     * interceptor) and the channel to it, whose answers run on {@code executor}.
     */
    public static InProcessEndpoint start(List<ServerServiceDefinition> services, Executor executor)
            throws IOException {
        byte[] random = new byte[16];
        new SecureRandom().nextBytes(random);
        String name = "fencer-http-" + HexFormat.of().formatHex(random);
        // Handlers never block (see GrpcEndpoints): they run on the calling thread, the HTTP port's.
        InProcessServerBuilder builder = InProcessServerBuilder.forName(name).directExecutor();
        for (ServerServiceDefinition service : services) {
            builder.addService(ServerInterceptors.intercept(service, IdentityFromHeader.INSTANCE));
        }
        Server server = builder.build().start();
        ManagedChannel channel = InProcessChannelBuilder.forName(name).executor(executor).build();
        return new InProcessEndpoint(server, channel);
    }

    /**
     * Returns the channel for a caller that presented {@code session} (null for plain HTTP) from {@code remote}: its
     * calls act as the common name of the session's verified client certificate, or as
     * {@link Identities#ANONYMOUS} from {@code remote}'s address without one.
     */
    public Channel channelFor(SSLSession session, SocketAddress remote) {
        Optional<String> identity = Identities.commonName(session);
        return ClientInterceptors.intercept(channel, new IdentityHeader(identity.orElse(null),
                Identities.address(remote)));
    }

    @Override
    public void close() {
        channel.shutdownNow();
        server.shutdownNow();
    }

    /** Puts the caller's identity (null: anonymous) and address in the header of each call. */
    private record IdentityHeader(String identity, String address) implements ClientInterceptor {
        @Override
        public <RequestT, ResponseT> ClientCall<RequestT, ResponseT> interceptCall(
                MethodDescriptor<RequestT, ResponseT> method, CallOptions options, Channel next) {
            return new ForwardingClientCall.SimpleForwardingClientCall<>(next.newCall(method, options)) {
                @Override
                public void start(Listener<ResponseT> listener, Metadata headers) {
                    if (identity != null) {
                        // An ASCII header would carry "café" as "caf?", another identity: percent-encoded UTF-8
                        // carries every common name as it is.
                        headers.put(IDENTITY, URLEncoder.encode(identity, StandardCharsets.UTF_8));
                    }
                    headers.put(ADDRESS, address);
                    super.start(listener, headers);
                }
            };
        }
    }

    /** Reads the identity {@link IdentityHeader} put in the header; installed on the in-process server only. */
    private enum IdentityFromHeader implements ServerInterceptor {
        INSTANCE;

        @Override
        public <RequestT, ResponseT> ServerCall.Listener<RequestT> interceptCall(ServerCall<RequestT, ResponseT> call,
                Metadata headers, ServerCallHandler<RequestT, ResponseT> next) {
            String identity = headers.get(IDENTITY);
            String address = headers.get(ADDRESS);
            Context context = Identities.withAddress(Context.current(),
                    address == null ? Identities.UNKNOWN_ADDRESS : address);
            if (identity != null) {
                context = Identities.withIdentity(context, URLDecoder.decode(identity, StandardCharsets.UTF_8));
            }
            return Contexts.interceptCall(context, call, headers, next);
        }
    }
}
