package io.fencer.server.http;

import com.google.protobuf.Message;
import io.grpc.MethodDescriptor;
import io.grpc.ServiceDescriptor;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * One method of a gRPC service as the HTTP port serves it: its path ({@code /fencer.v1.Locks/Acquire}), its message
 * types for JSON, and the method to call in-process with the request's bytes as they are, so that the service's own
 * guard parses them (and refuses undecodable or oversized ones) exactly as on the gRPC port.
 *
 * @param unary false for a streaming method, which the HTTP port does not serve
 */
record ConnectRoute(String path, MethodDescriptor<byte[], byte[]> method, Message requestPrototype,
        Message responsePrototype, boolean unary) {

    /** Returns the routes of every method of {@code services}, by path. */
    static Map<String, ConnectRoute> of(List<ServiceDescriptor> services) {
        Map<String, ConnectRoute> routes = new HashMap<>();
        for (ServiceDescriptor service : services) {
            for (MethodDescriptor<?, ?> method : service.getMethods()) {
                ConnectRoute route = of(method);
                routes.put(route.path(), route);
            }
        }
        return Map.copyOf(routes);
    }

    private static ConnectRoute of(MethodDescriptor<?, ?> method) {
        MethodDescriptor<byte[], byte[]> bytes = MethodDescriptor.<byte[], byte[]>newBuilder()
                .setType(method.getType())
                .setFullMethodName(method.getFullMethodName())
                .setRequestMarshaller(BytesMarshaller.INSTANCE)
                .setResponseMarshaller(BytesMarshaller.INSTANCE)
                .build();
        return new ConnectRoute("/" + method.getFullMethodName(), bytes, prototype(method.getRequestMarshaller()),
                prototype(method.getResponseMarshaller()), method.getType() == MethodDescriptor.MethodType.UNARY);
    }

    private static Message prototype(MethodDescriptor.Marshaller<?> marshaller) {
        if (marshaller instanceof MethodDescriptor.PrototypeMarshaller<?> typed
                && typed.getMessagePrototype() instanceof Message message) {
            return message;
        }
        throw new IllegalArgumentException("not a protobuf marshaller: " + marshaller);
    }

    /** Passes messages through as their serialized bytes. */
    private enum BytesMarshaller implements MethodDescriptor.Marshaller<byte[]> {
        INSTANCE;

        @Override
        public InputStream stream(byte[] value) {
            return new ByteArrayInputStream(value);
        }

        @Override
        public byte[] parse(InputStream stream) {
            try {
                return stream.readAllBytes(); // answers of our own services, bounded by what they send
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }
}
