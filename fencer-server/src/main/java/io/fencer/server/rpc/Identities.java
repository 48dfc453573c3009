package io.fencer.server.rpc;

import io.grpc.Context;
import io.grpc.Contexts;
import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import java.net.UnknownHostException;
import java.security.cert.Certificate;
import java.security.cert.X509Certificate;
import java.util.Arrays;
import java.util.Optional;
import javax.naming.InvalidNameException;
import javax.naming.ldap.LdapName;
import javax.naming.ldap.Rdn;
import javax.net.ssl.SSLPeerUnverifiedException;
import javax.net.ssl.SSLSession;

/**
 * Who is calling: the identity of a call's client, which ACLs and the holder shown by {@code Describe} name.
 *
 * <p>Under TLS with client certificates the identity is the common name (CN) of the client's certificate, which
 * the handshake has verified against the configured CA. Without a client certificate (plaintext, or TLS without a
 * client CA) every caller is {@link #ANONYMOUS}: nothing on the wire can prove who it is, so nothing claims to.
 * The identity is derived here only, from the transport, and never from anything the client sends in a message
 * or header (the HTTP port's calls reach the services in-process, with the identity of the HTTP port's own TLS
 * session: see {@link InProcessEndpoint}).
 *
 * <p>Quotas need to tell anonymous callers apart, which their identity cannot: {@link #quotaIdentity()} is the
 * identity of a caller with a certificate, and {@code anonymous@ADDRESS} for an anonymous one, by the network address
 * its connection comes from (an IPv6 address by its /64 prefix, the block one host is usually given). Callers behind
 * one NAT or proxy share an address, and so a quota; give them client certificates to count them apart.
 */
public final class Identities {
    /** The identity of a caller that presented no verified certificate. */
    public static final String ANONYMOUS = "anonymous";

    private static final Context.Key<String> IDENTITY = Context.key("fencer-identity");
    /** The network address of the call's connection, as {@link #address(SocketAddress)} spells it. */
    private static final Context.Key<String> ADDRESS = Context.key("fencer-address");
    /** The address of a caller whose connection names none this code can read (never the case over TCP). */
    static final String UNKNOWN_ADDRESS = "unknown";

    private Identities() {}

    /** Returns the identity of the call being served on this thread, or {@link #ANONYMOUS} outside any call. */
    public static String current() {
        String identity = IDENTITY.get();
        return identity == null ? ANONYMOUS : identity;
    }

    /**
     * Returns the identity the per-identity quotas of the call being served count: {@link #current()} for a caller
     * with a client certificate, {@code anonymous@ADDRESS} for an anonymous one (see the class doc).
     */
    public static String quotaIdentity() {
        String identity = current();
        if (!identity.equals(ANONYMOUS)) {
            return identity;
        }
        String address = ADDRESS.get();
        return ANONYMOUS + "@" + (address == null ? UNKNOWN_ADDRESS : address);
    }

    /**
     * Spells the address a caller connects from, as quotas count it: an IPv4 address as it is, an IPv6 address by its
     * /64 prefix (one host commonly holds the whole block) except the loopback address, and any other kind of
     * address as {@value #UNKNOWN_ADDRESS}.
     */
    static String address(SocketAddress remote) {
        if (!(remote instanceof InetSocketAddress socket) || socket.getAddress() == null) {
            return UNKNOWN_ADDRESS;
        }
        InetAddress address = socket.getAddress();
        if (address instanceof Inet6Address && !address.isLoopbackAddress()) {
            byte[] prefix = Arrays.copyOf(address.getAddress(), 16);
            Arrays.fill(prefix, 8, 16, (byte) 0);
            try {
                return InetAddress.getByAddress(prefix).getHostAddress() + "/64";
            } catch (UnknownHostException e) {
                throw new IllegalStateException("16 bytes are an IPv6 address", e);
            }
        }
        return address.getHostAddress();
    }

    /** Returns {@code context} with {@code address} (as {@link #address} spells it) as its caller's address. */
    static Context withAddress(Context context, String address) {
        return context.withValue(ADDRESS, address);
    }

    /** Returns the interceptor that puts each call's identity in its context; every gRPC endpoint installs it. */
    public static ServerInterceptor interceptor() {
        return Interceptor.INSTANCE;
    }

    /**
     * Returns {@code context} with {@code identity} as its caller's. Package-private: besides this package's tests
     * (their {@code TestIdentities} stand in for a client certificate), only {@link InProcessEndpoint} calls it, with
     * the common name of the client certificate the HTTP port verified.
     */
    static Context withIdentity(Context context, String identity) {
        return context.withValue(IDENTITY, identity);
    }

    /**
     * Returns the identity of a caller that presented {@code session} (null for plain HTTP): the CN of its verified
     * client certificate, or {@link #ANONYMOUS}; what {@link InProcessEndpoint#channelFor} calls act as.
     */
    public static String of(SSLSession session) {
        return commonName(session).orElse(ANONYMOUS);
    }

    /** Returns the CN of the verified client certificate of {@code session}, if there is one. */
    static Optional<String> commonName(SSLSession session) {
        if (session == null) {
            return Optional.empty();
        }
        Certificate[] chain;
        try {
            chain = session.getPeerCertificates();
        } catch (SSLPeerUnverifiedException e) {
            return Optional.empty(); // TLS without a client certificate
        }
        if (chain.length == 0 || !(chain[0] instanceof X509Certificate leaf)) {
            return Optional.empty();
        }
        return commonName(leaf);
    }

    static Optional<String> commonName(X509Certificate certificate) {
        try {
            for (Rdn rdn : new LdapName(certificate.getSubjectX500Principal().getName()).getRdns()) {
                if (rdn.getType().equalsIgnoreCase("CN")) {
                    String name = String.valueOf(rdn.getValue());
                    return name.isEmpty() ? Optional.empty() : Optional.of(name);
                }
            }
        } catch (InvalidNameException e) {
            return Optional.empty(); // a subject the JDK itself produced but cannot parse back: no identity
        }
        return Optional.empty();
    }

    private enum Interceptor implements ServerInterceptor {
        INSTANCE;

        @Override
        public <RequestT, ResponseT> ServerCall.Listener<RequestT> interceptCall(ServerCall<RequestT, ResponseT> call,
                Metadata headers, ServerCallHandler<RequestT, ResponseT> next) {
            SSLSession session = call.getAttributes().get(Grpc.TRANSPORT_ATTR_SSL_SESSION);
            Optional<String> name = commonName(session);
            if (name.isEmpty()) {
                String address = address(call.getAttributes().get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR));
                return Contexts.interceptCall(withAddress(Context.current(), address), call, headers, next);
            }
            return Contexts.interceptCall(Context.current().withValue(IDENTITY, name.get()), call, headers, next);
        }
    }
}
