package io.fencer.server.tls;

import java.io.IOException;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.cert.X509Certificate;
import java.util.Base64;
import java.util.List;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;

/**
 * A server's TLS material, read and checked by {@link TlsFiles#load}: what every port's TLS is built from, so the
 * client port, the admin port and the Raft port serve exactly what was checked. Its {@link #toString()} never
 * shows the key.
 */
public final class TlsMaterial {
    /** The protocol versions every Fencer port accepts: TLS 1.3, and 1.2 for older clients; nothing older. */
    public static final List<String> PROTOCOLS = List.of("TLSv1.3", "TLSv1.2");

    private final TlsFiles files;
    private final PrivateKey privateKey;
    private final List<X509Certificate> certificateChain;
    private final List<X509Certificate> clientCa;

    TlsMaterial(TlsFiles files, PrivateKey privateKey, List<X509Certificate> certificateChain,
            List<X509Certificate> clientCa) {
        if (certificateChain.isEmpty()) {
            throw new IllegalArgumentException("a certificate chain needs at least the server's certificate");
        }
        this.files = files;
        this.privateKey = privateKey;
        this.certificateChain = List.copyOf(certificateChain);
        this.clientCa = List.copyOf(clientCa);
    }

    /** Returns the files this was read from. */
    public TlsFiles files() {
        return files;
    }

    public PrivateKey privateKey() {
        return privateKey;
    }

    /** Returns the server's certificate first, then any intermediates. */
    public List<X509Certificate> certificateChain() {
        return certificateChain;
    }

    /** Returns true when clients of the client and admin ports must present a certificate of {@link #clientCa()}. */
    public boolean clientCertificatesRequired() {
        return !clientCa.isEmpty();
    }

    /** Returns the CA certificates client certificates must chain to; empty when none are asked for. */
    public List<X509Certificate> clientCa() {
        return clientCa;
    }

    /**
     * Returns what a peer's certificate must chain to on the Raft port: the client CA, whose certificates peers
     * present to each other. Without one (a group of one peer only, see {@link TlsFiles}) exactly this server's
     * certificate: nobody else has its key, so nothing can talk to the Raft port.
     */
    public List<X509Certificate> peerTrust() {
        return clientCertificatesRequired() ? clientCa : List.of(certificateChain.get(0));
    }

    /**
     * Returns a JDK TLS context serving this certificate and, when client certificates are required, trusting the
     * client CA (for the admin and HTTP ports, whose Netty TLS runs on its engines; the gRPC ports use Netty's own
     * contexts).
     */
    public SSLContext sslContext() {
        try {
            // The key store lives in memory only; its password protects nothing and is thrown away.
            byte[] random = new byte[12];
            new SecureRandom().nextBytes(random);
            char[] password = Base64.getEncoder().encodeToString(random).toCharArray();
            KeyStore keys = KeyStore.getInstance("PKCS12");
            keys.load(null, null);
            keys.setKeyEntry("server", privateKey, password, certificateChain.toArray(X509Certificate[]::new));
            KeyManagerFactory keyManagers = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            keyManagers.init(keys, password);
            TrustManager[] trustManagers = null;
            if (clientCertificatesRequired()) {
                KeyStore trusted = KeyStore.getInstance("PKCS12");
                trusted.load(null, null);
                for (int i = 0; i < clientCa.size(); i++) {
                    trusted.setCertificateEntry("client-ca-" + i, clientCa.get(i));
                }
                TrustManagerFactory factory = TrustManagerFactory.getInstance(
                        TrustManagerFactory.getDefaultAlgorithm());
                factory.init(trusted);
                trustManagers = factory.getTrustManagers();
            }
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(keyManagers.getKeyManagers(), trustManagers, null);
            return context;
        } catch (GeneralSecurityException | IOException e) {
            throw new IllegalStateException("the TLS context of " + files.certificate() + " cannot be made", e);
        }
    }

    /** Returns the JDK TLS parameters of a server socket of {@code context}: the protocols, and client auth. */
    public SSLParameters serverParameters(SSLContext context) {
        SSLParameters parameters = context.getDefaultSSLParameters();
        parameters.setProtocols(PROTOCOLS.toArray(String[]::new));
        parameters.setNeedClientAuth(clientCertificatesRequired());
        return parameters;
    }

    @Override
    public String toString() {
        return "TlsMaterial[" + certificateChain.get(0).getSubjectX500Principal().getName() + " from "
                + files.certificate() + (clientCertificatesRequired() ? ", client CA " + files.clientCa() : "") + "]";
    }
}
