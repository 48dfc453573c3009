package io.fencer.server;

import io.fencer.core.InvalidArgumentException;
import io.grpc.ForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerMethodDefinition;
import io.grpc.ServerServiceDefinition;
import io.grpc.StatusRuntimeException;
import java.io.InputStream;

/**
 * Makes undecodable requests (invalid UTF-8 in a string field, truncated or garbage bytes) fail with
 * INVALID_ARGUMENT and an {@code ErrorDetail} of reason INVALID_ARGUMENT, instead of gRPC's default (a parse
 * exception closes the call as UNKNOWN or INTERNAL).
 *
 * <p>Every method's request marshaller is wrapped so that parsing never throws: it yields the message or a
 * {@link Malformed} marker. A wrapping call handler answers a marker with the error and never hands it, nor
 * anything after it, to the service.
 */
final class MalformedRequests {
    private MalformedRequests() {}

    static ServerServiceDefinition guard(ServerServiceDefinition service) {
        ServerServiceDefinition.Builder guarded =
                ServerServiceDefinition.builder(service.getServiceDescriptor().getName());
        for (ServerMethodDefinition<?, ?> method : service.getMethods()) {
            guarded.addMethod(guardMethod(method));
        }
        return guarded.build();
    }

    /** A request that could not be decoded, with the error to answer. */
    private record Malformed(InvalidArgumentException error) {}

    private static <RequestT, ResponseT> ServerMethodDefinition<Object, ResponseT> guardMethod(
            ServerMethodDefinition<RequestT, ResponseT> method) {
        MethodDescriptor<RequestT, ResponseT> descriptor = method.getMethodDescriptor();
        MethodDescriptor<Object, ResponseT> guarded = descriptor.toBuilder(
                new GuardedMarshaller<>(descriptor.getRequestMarshaller(), descriptor.getBareMethodName()),
                descriptor.getResponseMarshaller()).build();
        return ServerMethodDefinition.create(guarded, new GuardedHandler<>(method.getServerCallHandler()));
    }

    /** A request marshaller whose parse failures become {@link Malformed} markers. */
    private static final class GuardedMarshaller<T> implements MethodDescriptor.Marshaller<Object> {
        private final MethodDescriptor.Marshaller<T> delegate;
        private final String methodName;

        GuardedMarshaller(MethodDescriptor.Marshaller<T> delegate, String methodName) {
            this.delegate = delegate;
            this.methodName = methodName;
        }

        @Override
        @SuppressWarnings("unchecked")
        public InputStream stream(Object value) {
            return delegate.stream((T) value);
        }

        @Override
        public Object parse(InputStream stream) {
            try {
                return delegate.parse(stream);
            } catch (StatusRuntimeException | IllegalArgumentException | IllegalStateException e) {
                Throwable cause = e.getCause() != null ? e.getCause() : e;
                return new Malformed(new InvalidArgumentException("request", "", "the " + methodName
                        + " request cannot be decoded: " + cause.getMessage()));
            }
        }
    }

    /** Starts the service's handler, answering a malformed message itself. */
    private static final class GuardedHandler<RequestT, ResponseT> implements ServerCallHandler<Object, ResponseT> {
        private final ServerCallHandler<RequestT, ResponseT> delegate;

        GuardedHandler(ServerCallHandler<RequestT, ResponseT> delegate) {
            this.delegate = delegate;
        }

        @Override
        @SuppressWarnings("unchecked")
        public ServerCall.Listener<Object> startCall(ServerCall<Object, ResponseT> call, Metadata headers) {
            // The service sees the same call; its request type is only ever used for the messages we forward.
            ServerCall<RequestT, ResponseT> typed = (ServerCall<RequestT, ResponseT>) (ServerCall<?, ResponseT>) call;
            ServerCall.Listener<Object> listener = (ServerCall.Listener<Object>) delegate.startCall(typed, headers);
            return new ForwardingServerCallListener.SimpleForwardingServerCallListener<>(listener) {
                private boolean refused;

                @Override
                public void onMessage(Object message) {
                    if (refused) {
                        return;
                    }
                    if (message instanceof Malformed malformed) {
                        refused = true;
                        StatusRuntimeException error = ErrorCatalogue.toStatusException(malformed.error());
                        call.close(error.getStatus(), error.getTrailers());
                        return;
                    }
                    super.onMessage(message);
                }

                @Override
                public void onHalfClose() {
                    if (!refused) { // the service would answer a unary call without its message as INTERNAL
                        super.onHalfClose();
                    }
                }
            };
        }
    }
}
