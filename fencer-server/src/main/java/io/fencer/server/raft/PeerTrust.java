package io.fencer.server.raft;

import io.fencer.core.InvalidArgumentException;
import java.io.IOException;
import java.net.Socket;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.CertificateException;
import java.security.cert.X509Certificate;
import java.util.List;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLException;
import javax.net.ssl.TrustManager;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509ExtendedTrustManager;

/**
 * The trust of the Raft port and of the links to other peers: the JDK's PKIX trust manager over the group's CA, whose
 * refusal of a certificate is rethrown naming the certificate. TLS engines report a refusal without it, and Netty's
 * OpenSSL engine reports every one as "General OpenSslEngine problem", the reason being its cause: an operator reading
 * "refused a Raft connection" must learn whose certificate it was and why ({@link #refusal}).
 */
final class PeerTrust extends X509ExtendedTrustManager {
    /** What Netty's OpenSSL engine says of any failed handshake, the reason being the exception's cause. */
    private static final String OPENSSL_GENERAL = "General OpenSslEngine problem";

    private final X509ExtendedTrustManager trust;

    private PeerTrust(X509ExtendedTrustManager trust) {
        this.trust = trust;
    }

    /** Returns the trust of certificates issued by one of {@code authorities}. */
    static PeerTrust of(List<X509Certificate> authorities) throws SSLException {
        try {
            KeyStore store = KeyStore.getInstance(KeyStore.getDefaultType());
            store.load(null, null);
            for (int i = 0; i < authorities.size(); i++) {
                store.setCertificateEntry("authority-" + i, authorities.get(i));
            }
            TrustManagerFactory factory = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            factory.init(store);
            for (TrustManager manager : factory.getTrustManagers()) {
                if (manager instanceof X509ExtendedTrustManager extended) {
                    return new PeerTrust(extended);
                }
            }
            throw new SSLException("the JDK's " + factory.getAlgorithm() + " trust managers have no X.509 one");
        } catch (GeneralSecurityException | IOException e) {
            throw new SSLException("cannot trust the " + authorities.size() + " certificates of the group's CA", e);
        }
    }

    /**
     * Says why a TLS handshake failed: the refusal of a certificate (naming it, from this trust) wherever it is in
     * {@code failure}'s causes, else the failure's message with its innermost cause's, without the OpenSSL engine's
     * "General OpenSslEngine problem".
     */
    static String refusal(Throwable failure) {
        Throwable innermost = failure;
        for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
            if (cause instanceof CertificateException) {
                return cause.getMessage();
            }
            innermost = cause;
        }
        String outer = String.valueOf(failure.getMessage());
        String inner = String.valueOf(innermost.getMessage());
        if (innermost == failure || outer.contains(inner)) {
            return outer;
        }
        return outer.equals(OPENSSL_GENERAL) ? inner : outer + ": " + inner;
    }

    @Override
    public void checkClientTrusted(X509Certificate[] chain, String authType) throws CertificateException {
        try {
            trust.checkClientTrusted(chain, authType);
        } catch (CertificateException e) {
            throw named(chain, e);
        }
    }

    @Override
    public void checkClientTrusted(X509Certificate[] chain, String authType, Socket socket)
            throws CertificateException {
        try {
            trust.checkClientTrusted(chain, authType, socket);
        } catch (CertificateException e) {
            throw named(chain, e);
        }
    }

    @Override
    public void checkClientTrusted(X509Certificate[] chain, String authType, SSLEngine engine)
            throws CertificateException {
        try {
            trust.checkClientTrusted(chain, authType, engine);
        } catch (CertificateException e) {
            throw named(chain, e);
        }
    }

    @Override
    public void checkServerTrusted(X509Certificate[] chain, String authType) throws CertificateException {
        try {
            trust.checkServerTrusted(chain, authType);
        } catch (CertificateException e) {
            throw named(chain, e);
        }
    }

    @Override
    public void checkServerTrusted(X509Certificate[] chain, String authType, Socket socket)
            throws CertificateException {
        try {
            trust.checkServerTrusted(chain, authType, socket);
        } catch (CertificateException e) {
            throw named(chain, e);
        }
    }

    @Override
    public void checkServerTrusted(X509Certificate[] chain, String authType, SSLEngine engine)
            throws CertificateException {
        try {
            trust.checkServerTrusted(chain, authType, engine);
        } catch (CertificateException e) {
            throw named(chain, e);
        }
    }

    @Override
    public X509Certificate[] getAcceptedIssuers() {
        return trust.getAcceptedIssuers();
    }

    /** Returns {@code refusal} naming the certificate refused: its subject, serial number and issuer. */
    private static CertificateException named(X509Certificate[] chain, CertificateException refusal) {
        if (chain == null || chain.length == 0) {
            return refusal;
        }
        X509Certificate leaf = chain[0];
        return new CertificateException("its certificate '" + name(leaf.getSubjectX500Principal().getName())
                + "' (serial " + leaf.getSerialNumber().toString(16) + ", issued by '"
                + name(leaf.getIssuerX500Principal().getName()) + "') is refused: " + refusal.getMessage(), refusal);
    }

    /** Returns a certificate's name as shown: a stranger chooses it, so it is truncated and its controls escaped. */
    private static String name(String name) {
        return InvalidArgumentException.printable(name);
    }
}
