package io.fencer.server.rpc;

import io.fencer.core.FencerException;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LimitExceededException;
import io.grpc.ForwardingServerCallListener;
import io.grpc.KnownLength;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerMethodDefinition;
import io.grpc.ServerServiceDefinition;
import io.grpc.StatusRuntimeException;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;

/**
 * Makes undecodable requests (invalid UTF-8 in a string field, truncated or garbage bytes) fail with
 * INVALID_ARGUMENT and an {@code ErrorDetail} of reason INVALID_ARGUMENT, instead of gRPC's default (a parse
 * exception closes the call as UNKNOWN or INTERNAL).
 *
 * <p>Every method's request marshaller is wrapped so that parsing never throws: it yields the message or a
 * {@link Malformed} marker. A wrapping call handler answers a marker with the error and never hands it, nor
 * anything after it, to the service. A request over the service's size limit is refused the same way, as
 * RESOURCE_EXHAUSTED naming the limit and the request's size: one gRPC server hosts services with different limits,
 * and its transport reads up to twice the largest of them (see {@link GrpcEndpoints#TRANSPORT_MESSAGE_FACTOR}) so
 * that a request somewhat over its service's limit gets this answer, with its ErrorDetail, and not the transport's.
 */
public final class MalformedRequests {
    private MalformedRequests() {}

    /** Guards {@code service}, refusing requests larger than {@code messageBytesMax}. */
    public static ServerServiceDefinition guard(ServerServiceDefinition service, int messageBytesMax) {
        ServerServiceDefinition.Builder guarded =
                ServerServiceDefinition.builder(service.getServiceDescriptor().getName());
        for (ServerMethodDefinition<?, ?> method : service.getMethods()) {
            guarded.addMethod(guardMethod(method, messageBytesMax));
        }
        return guarded.build();
    }

    /** A request that could not be decoded or is too large, with the error to answer. */
    private record Malformed(FencerException error) {}

    private static <RequestT, ResponseT> ServerMethodDefinition<Object, ResponseT> guardMethod(
            ServerMethodDefinition<RequestT, ResponseT> method, int messageBytesMax) {
        MethodDescriptor<RequestT, ResponseT> descriptor = method.getMethodDescriptor();
        MethodDescriptor<Object, ResponseT> guarded = descriptor.toBuilder(
                new GuardedMarshaller<>(descriptor.getRequestMarshaller(), descriptor.getBareMethodName(),
                        messageBytesMax),
                descriptor.getResponseMarshaller()).build();
        return ServerMethodDefinition.create(guarded, new GuardedHandler<>(method.getServerCallHandler()));
    }

    /** A request marshaller whose parse failures become {@link Malformed} markers. */
    private static final class GuardedMarshaller<T> implements MethodDescriptor.Marshaller<Object> {
        private final MethodDescriptor.Marshaller<T> delegate;
        private final String methodName;
        private final int messageBytesMax;

        GuardedMarshaller(MethodDescriptor.Marshaller<T> delegate, String methodName, int messageBytesMax) {
            this.delegate = delegate;
            this.methodName = methodName;
            this.messageBytesMax = messageBytesMax;
        }

        @Override
        @SuppressWarnings("unchecked")
        public InputStream stream(Object value) {
            return delegate.stream((T) value);
        }

        @Override
        public Object parse(InputStream stream) {
            try {
                InputStream checked = stream;
                long bytes;
                if (stream instanceof KnownLength) {
                    bytes = stream.available();
                } else { // read at most one byte past the limit to learn whether it is over
                    byte[] read = stream.readNBytes(messageBytesMax + 1);
                    bytes = read.length;
                    checked = new ByteArrayInputStream(read);
                    if (bytes > messageBytesMax) { // count the rest, which the transport has bounded, to name it
                        bytes += stream.transferTo(OutputStream.nullOutputStream());
                    }
                }
                if (bytes > messageBytesMax) {
                    return new Malformed(new LimitExceededException("inboundMessageBytesMax", messageBytesMax,
                            "the " + methodName + " request is " + bytes + " bytes, more than the "
                                    + messageBytesMax + " bytes allowed"));
                }
                return delegate.parse(checked);
            } catch (IOException e) {
                return new Malformed(new InvalidArgumentException("request", "", "the " + methodName
                        + " request cannot be read: " + e.getMessage()));
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
