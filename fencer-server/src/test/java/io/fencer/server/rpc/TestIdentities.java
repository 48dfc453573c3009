package io.fencer.server.rpc;

import io.grpc.ClientInterceptor;
import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.stub.MetadataUtils;

/**
 * For tests only, in test sources: callers named by a header instead of a client certificate, for the servers of
 * tests that have no TLS. The server side puts the header's name in the same context key as
 * {@link Identities#interceptor()}; production code cannot do so, since it has neither this class nor access to
 * {@link Identities#withIdentity}, and no production server reads the header.
 */
public final class TestIdentities {
    /** The header naming the caller. */
    static final Metadata.Key<String> HEADER = Metadata.Key.of("x-fencer-test-identity",
            Metadata.ASCII_STRING_MARSHALLER);

    private TestIdentities() {}

    /** Returns the server interceptor that makes the header's name the call's identity (none: anonymous). */
    public static ServerInterceptor fromHeader() {
        return new ServerInterceptor() {
            @Override
            public <RequestT, ResponseT> ServerCall.Listener<RequestT> interceptCall(
                    ServerCall<RequestT, ResponseT> call, Metadata headers,
                    ServerCallHandler<RequestT, ResponseT> next) {
                String identity = headers.get(HEADER);
                if (identity == null) {
                    return next.startCall(call, headers);
                }
                return Contexts.interceptCall(Identities.withIdentity(Context.current(), identity), call, headers,
                        next);
            }
        };
    }

    /** Returns the client interceptor that names {@code identity} as the caller of every call. */
    public static ClientInterceptor as(String identity) {
        Metadata headers = new Metadata();
        headers.put(HEADER, identity);
        return MetadataUtils.newAttachHeadersInterceptor(headers);
    }
}
