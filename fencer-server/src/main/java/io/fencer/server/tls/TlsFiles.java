package io.fencer.server.tls;

import java.io.IOException;
import java.io.InputStream;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.PrivateKey;
import java.security.Signature;
import java.security.cert.Certificate;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.time.Clock;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.bouncycastle.asn1.pkcs.PrivateKeyInfo;
import org.bouncycastle.openssl.PEMException;
import org.bouncycastle.openssl.PEMParser;
import org.bouncycastle.openssl.jcajce.JcaPEMKeyConverter;

/**
 * Where a server's TLS material is: its certificate (PEM, the leaf first, then any intermediates), its private key
 * (PEM, unencrypted PKCS#8: {@code BEGIN PRIVATE KEY}) and, optionally, the CA whose certificates clients must
 * present. The same files serve the client port, the admin port and the Raft port between peers.
 *
 * <p>{@link #load} checks everything a handshake would otherwise fail on later, obscurely: each file exists and
 * is readable, holds what it should, the key belongs to the certificate, and no certificate is expired or not yet
 * valid. Every error names the file.
 *
 * @param certificate the server's certificate chain (also the certificate it presents to the other peers)
 * @param privateKey the certificate's private key
 * @param clientCa the CA certificates that client certificates must chain to, and the certificates peers present
 *     to each other on the Raft port; null = no client certificates asked for (clients are anonymous), which only a
 *     group of one peer allows: peers must authenticate each other
 */
public record TlsFiles(Path certificate, Path privateKey, Path clientCa) {
    public TlsFiles {
        Objects.requireNonNull(certificate, "certificate");
        Objects.requireNonNull(privateKey, "privateKey");
    }

    /** Returns true when clients must present a certificate issued by {@link #clientCa()}. */
    public boolean clientCertificatesRequired() {
        return clientCa != null;
    }

    /** Reads and checks the files now. */
    public TlsMaterial load() {
        return load(Clock.systemUTC());
    }

    /**
     * Reads and checks the files, judging validity periods at {@code clock}'s now.
     *
     * @throws IllegalArgumentException naming the file: missing, unreadable, not what it should be, a key that
     *     does not match the certificate, or a certificate expired or not yet valid
     */
    public TlsMaterial load(Clock clock) {
        Instant now = clock.instant();
        List<X509Certificate> chain = certificates("TLS certificate", certificate);
        checkValidity("TLS certificate", certificate, chain, now);
        PrivateKey key = key(privateKey);
        checkMatch(key, chain.get(0));
        List<X509Certificate> trusted = List.of();
        if (clientCa != null) {
            trusted = certificates("client CA", clientCa);
            checkValidity("client CA", clientCa, trusted, now);
            for (X509Certificate ca : trusted) {
                if (ca.getBasicConstraints() < 0) {
                    throw new IllegalArgumentException("client CA " + clientCa + " holds a certificate that is not a "
                            + "CA (" + ca.getSubjectX500Principal().getName() + ")");
                }
            }
        }
        return new TlsMaterial(this, key, chain, trusted);
    }

    private static List<X509Certificate> certificates(String role, Path file) {
        byte[] bytes = read(role, file);
        List<X509Certificate> certificates = new ArrayList<>();
        try (InputStream in = new java.io.ByteArrayInputStream(bytes)) {
            for (Certificate read : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
                certificates.add((X509Certificate) read);
            }
        } catch (CertificateException | IOException | ClassCastException e) {
            throw new IllegalArgumentException(role + " " + file + " is not a PEM X.509 certificate: "
                    + e.getMessage(), e);
        }
        if (certificates.isEmpty()) {
            throw new IllegalArgumentException(role + " " + file + " holds no certificate (BEGIN CERTIFICATE)");
        }
        return List.copyOf(certificates);
    }

    private static void checkValidity(String role, Path file, List<X509Certificate> certificates, Instant now) {
        for (X509Certificate certificate : certificates) {
            String subject = certificate.getSubjectX500Principal().getName();
            if (now.isAfter(certificate.getNotAfter().toInstant())) {
                throw new IllegalArgumentException(role + " " + file + " has expired: " + subject + " was valid until "
                        + certificate.getNotAfter().toInstant());
            }
            if (now.isBefore(certificate.getNotBefore().toInstant())) {
                throw new IllegalArgumentException(role + " " + file + " is not valid yet: " + subject
                        + " is valid from " + certificate.getNotBefore().toInstant());
            }
        }
    }

    private static PrivateKey key(Path file) {
        String text = new String(read("TLS private key", file), StandardCharsets.US_ASCII);
        Object parsed;
        try (Reader reader = new java.io.StringReader(text); PEMParser parser = new PEMParser(reader)) {
            parsed = parser.readObject();
        } catch (IOException e) {
            // The parser's message may quote the file's bytes: only the kind of failure is repeated.
            throw new IllegalArgumentException("TLS private key " + file + " is not PEM", e);
        }
        if (!(parsed instanceof PrivateKeyInfo info)) {
            throw new IllegalArgumentException("TLS private key " + file + " is not an unencrypted PKCS#8 key "
                    + "(BEGIN PRIVATE KEY)" + (parsed == null ? "" : " but " + kind(parsed))
                    + "; convert it with 'openssl pkcs8 -topk8 -nocrypt'");
        }
        try {
            return new JcaPEMKeyConverter().getPrivateKey(info);
        } catch (PEMException e) {
            throw new IllegalArgumentException("TLS private key " + file + " is of an unsupported algorithm "
                    + info.getPrivateKeyAlgorithm().getAlgorithm(), e);
        }
    }

    private static String kind(Object parsed) {
        String name = parsed.getClass().getSimpleName();
        return switch (name) {
            case "PEMKeyPair" -> "a traditional OpenSSL key (BEGIN EC/RSA PRIVATE KEY)";
            case "PKCS8EncryptedPrivateKeyInfo", "PEMEncryptedKeyPair" -> "an encrypted key";
            case "X509CertificateHolder" -> "a certificate";
            default -> "a " + name;
        };
    }

    /** Proves the key belongs to the certificate: a signature made with it verifies with the certificate's key. */
    private void checkMatch(PrivateKey key, X509Certificate leaf) {
        String algorithm = switch (key.getAlgorithm()) {
            case "EC" -> "SHA256withECDSA";
            case "RSA" -> "SHA256withRSA";
            case "Ed25519", "EdDSA" -> "Ed25519";
            default -> throw new IllegalArgumentException("TLS private key " + privateKey + " is a "
                    + key.getAlgorithm() + " key; EC, RSA and Ed25519 keys are supported");
        };
        byte[] challenge = "fencer: does this key belong to the certificate?".getBytes(StandardCharsets.US_ASCII);
        boolean matches;
        try {
            Signature signer = Signature.getInstance(algorithm);
            signer.initSign(key);
            signer.update(challenge);
            byte[] signature = signer.sign();
            Signature verifier = Signature.getInstance(algorithm);
            verifier.initVerify(leaf.getPublicKey());
            verifier.update(challenge);
            matches = verifier.verify(signature);
        } catch (GeneralSecurityException e) {
            matches = false; // e.g. an RSA key against an EC certificate
        }
        if (!matches) {
            throw new IllegalArgumentException("TLS private key " + privateKey + " does not match the TLS certificate "
                    + certificate + " (" + leaf.getSubjectX500Principal().getName() + ")");
        }
    }

    private static byte[] read(String role, Path file) {
        try {
            return Files.readAllBytes(file);
        } catch (NoSuchFileException e) {
            throw new IllegalArgumentException(role + " " + file + " does not exist", e);
        } catch (IOException | SecurityException e) {
            throw new IllegalArgumentException(role + " " + file + " cannot be read: " + e, e);
        }
    }
}
