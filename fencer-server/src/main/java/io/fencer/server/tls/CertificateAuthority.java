package io.fencer.server.tls;

import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.GeneralSecurityException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Date;
import java.util.List;
import java.util.Objects;
import java.util.regex.Pattern;
import org.bouncycastle.asn1.x500.X500Name;
import org.bouncycastle.asn1.x500.X500NameBuilder;
import org.bouncycastle.asn1.x500.style.BCStyle;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.CertIOException;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509ExtensionUtils;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.openssl.jcajce.JcaPEMWriter;
import org.bouncycastle.openssl.jcajce.JcaPKCS8Generator;
import org.bouncycastle.operator.OperatorCreationException;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;

/**
 * A certificate authority made on the spot: an EC P-256 key and a self-signed CA certificate, which issues the
 * server certificate (also the certificate peers present to each other) and client certificates (whose CN is the
 * client's identity). It is what {@code fencer certs} writes for a quick start, and what the tests make their CAs,
 * expired certificates and foreign CAs with.
 *
 * <p>Certificates and keys are built by BouncyCastle's X.509 and PEM writers and signed through the JDK's own
 * providers (BouncyCastle is not installed as a security provider). Keys are written PKCS#8, unencrypted, to
 * files only their owner can read.
 */
public final class CertificateAuthority {
    /** How far before "now" a certificate becomes valid, so a host whose clock is a little behind accepts it. */
    static final Duration CLOCK_SKEW_ALLOWED = Duration.ofMinutes(5);
    private static final String SIGNATURE_ALGORITHM = "SHA256withECDSA";
    private static final Pattern IP_V4 = Pattern.compile("\\d{1,3}(\\.\\d{1,3}){3}");
    private static final SecureRandom RANDOM = new SecureRandom();

    private final Issued ca;

    private CertificateAuthority(Issued ca) {
        this.ca = ca;
    }

    /** A certificate and its private key. */
    public record Issued(X509Certificate certificate, PrivateKey privateKey) {
        public Issued {
            Objects.requireNonNull(certificate, "certificate");
            Objects.requireNonNull(privateKey, "privateKey");
        }

        /** Returns the certificate as PEM ({@code BEGIN CERTIFICATE}). */
        public String certificatePem() {
            return pem(certificate);
        }

        /** Returns the private key as unencrypted PKCS#8 PEM ({@code BEGIN PRIVATE KEY}). */
        public String privateKeyPem() {
            try {
                return pem(new JcaPKCS8Generator(privateKey, null).generate());
            } catch (org.bouncycastle.util.io.pem.PemGenerationException e) {
                throw new IllegalStateException("the private key cannot be written as PKCS#8", e);
            }
        }

        /**
         * Writes the certificate to {@code certificateFile} and the key to {@code keyFile} (mode 600, created so
         * before any key byte is written).
         *
         * @param overwrite whether existing files are replaced; when false an existing file is an error naming it
         */
        public void write(Path certificateFile, Path keyFile, boolean overwrite) throws IOException {
            writeFile(certificateFile, certificatePem(), overwrite, false);
            writeFile(keyFile, privateKeyPem(), overwrite, true);
        }

        @Override
        public String toString() {
            return "Issued[" + certificate.getSubjectX500Principal().getName() + "]"; // never the key
        }
    }

    /** Makes a CA named {@code commonName} whose certificate is valid from a few minutes ago for {@code validity}. */
    public static CertificateAuthority create(String commonName, Duration validity) {
        Instant now = Instant.now();
        return create(commonName, now.minus(CLOCK_SKEW_ALLOWED), now.plus(validity));
    }

    /** Makes a CA named {@code commonName} whose certificate is valid from {@code notBefore} to {@code notAfter}. */
    public static CertificateAuthority create(String commonName, Instant notBefore, Instant notAfter) {
        KeyPair keys = newKeyPair();
        X500Name name = name(commonName);
        try {
            JcaX509ExtensionUtils extensions = new JcaX509ExtensionUtils();
            X509v3CertificateBuilder builder = builder(name, name, keys, notBefore, notAfter)
                    .addExtension(Extension.basicConstraints, true, new BasicConstraints(0))
                    .addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.keyCertSign | KeyUsage.cRLSign))
                    .addExtension(Extension.subjectKeyIdentifier, false,
                            extensions.createSubjectKeyIdentifier(keys.getPublic()));
            return new CertificateAuthority(new Issued(sign(builder, keys.getPrivate()), keys.getPrivate()));
        } catch (GeneralSecurityException | CertIOException e) {
            throw new IllegalStateException("the CA certificate cannot be made", e);
        }
    }

    /** Returns the CA's own certificate and key. */
    public Issued ca() {
        return ca;
    }

    /**
     * Issues a server certificate, valid for TLS servers and clients alike since peers connect to each other with
     * it: CN = the first DNS name (else the first address), with every name and address as a subject alternative
     * name, which is what clients check the host they dialled against.
     *
     * @throws IllegalArgumentException when no name or address is given, or an address is not an IP literal
     */
    public Issued issueServer(List<String> dnsNames, List<String> ipAddresses, Instant notBefore, Instant notAfter) {
        if (dnsNames.isEmpty() && ipAddresses.isEmpty()) {
            throw new IllegalArgumentException("a server certificate needs at least one DNS name or IP address");
        }
        List<GeneralName> alternatives = new ArrayList<>();
        dnsNames.forEach(dns -> alternatives.add(new GeneralName(GeneralName.dNSName, checkDnsName(dns))));
        ipAddresses.forEach(ip -> alternatives.add(new GeneralName(GeneralName.iPAddress, checkIpAddress(ip))));
        String commonName = dnsNames.isEmpty() ? ipAddresses.get(0) : dnsNames.get(0);
        return issue(commonName, notBefore, notAfter,
                new KeyPurposeId[] {KeyPurposeId.id_kp_serverAuth, KeyPurposeId.id_kp_clientAuth},
                new GeneralNames(alternatives.toArray(GeneralName[]::new)));
    }

    /** Issues a server certificate valid from a few minutes ago for {@code validity}. */
    public Issued issueServer(List<String> dnsNames, List<String> ipAddresses, Duration validity) {
        Instant now = Instant.now();
        return issueServer(dnsNames, ipAddresses, now.minus(CLOCK_SKEW_ALLOWED), now.plus(validity));
    }

    /** Issues a client certificate whose CN, the identity the server sees, is {@code commonName}. */
    public Issued issueClient(String commonName, Instant notBefore, Instant notAfter) {
        return issue(commonName, notBefore, notAfter, new KeyPurposeId[] {KeyPurposeId.id_kp_clientAuth}, null);
    }

    /** Issues a client certificate valid from a few minutes ago for {@code validity}. */
    public Issued issueClient(String commonName, Duration validity) {
        Instant now = Instant.now();
        return issueClient(commonName, now.minus(CLOCK_SKEW_ALLOWED), now.plus(validity));
    }

    private Issued issue(String commonName, Instant notBefore, Instant notAfter, KeyPurposeId[] purposes,
            GeneralNames alternatives) {
        KeyPair keys = newKeyPair();
        try {
            JcaX509ExtensionUtils extensions = new JcaX509ExtensionUtils();
            X500Name issuer = X500Name.getInstance(ca.certificate().getSubjectX500Principal().getEncoded());
            X509v3CertificateBuilder builder = builder(issuer, name(commonName), keys, notBefore, notAfter)
                    .addExtension(Extension.basicConstraints, true, new BasicConstraints(false))
                    .addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.digitalSignature))
                    .addExtension(Extension.extendedKeyUsage, false, new ExtendedKeyUsage(purposes))
                    .addExtension(Extension.subjectKeyIdentifier, false,
                            extensions.createSubjectKeyIdentifier(keys.getPublic()))
                    .addExtension(Extension.authorityKeyIdentifier, false,
                            extensions.createAuthorityKeyIdentifier(ca.certificate()));
            if (alternatives != null) {
                builder.addExtension(Extension.subjectAlternativeName, false, alternatives);
            }
            return new Issued(sign(builder, ca.privateKey()), keys.getPrivate());
        } catch (GeneralSecurityException | CertIOException e) {
            throw new IllegalStateException("the certificate of '" + commonName + "' cannot be made", e);
        }
    }

    private static X509v3CertificateBuilder builder(X500Name issuer, X500Name subject, KeyPair keys,
            Instant notBefore, Instant notAfter) {
        if (!notAfter.isAfter(notBefore)) {
            throw new IllegalArgumentException("a certificate's notAfter " + notAfter + " must be after its notBefore "
                    + notBefore);
        }
        // A random 127-bit serial: positive, unique without bookkeeping, within the 20 octets RFC 5280 allows.
        BigInteger serial = new BigInteger(127, RANDOM).setBit(0);
        return new JcaX509v3CertificateBuilder(issuer, serial, Date.from(notBefore), Date.from(notAfter), subject,
                keys.getPublic());
    }

    private static X509Certificate sign(X509v3CertificateBuilder builder, PrivateKey signer)
            throws GeneralSecurityException {
        try {
            return new JcaX509CertificateConverter()
                    .getCertificate(builder.build(new JcaContentSignerBuilder(SIGNATURE_ALGORITHM).build(signer)));
        } catch (OperatorCreationException e) {
            throw new GeneralSecurityException("no " + SIGNATURE_ALGORITHM + " signer", e);
        }
    }

    private static X500Name name(String commonName) {
        Objects.requireNonNull(commonName, "commonName");
        if (commonName.isBlank() || commonName.length() > 64) {
            throw new IllegalArgumentException("a common name must have 1 to 64 characters, not blank: '"
                    + commonName + "'");
        }
        return new X500NameBuilder(BCStyle.INSTANCE).addRDN(BCStyle.CN, commonName).build();
    }

    private static String checkDnsName(String dns) {
        if (dns == null || !dns.matches("[A-Za-z0-9*]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?")) {
            throw new IllegalArgumentException("'" + dns + "' is not a DNS name");
        }
        return dns;
    }

    private static String checkIpAddress(String ip) {
        // An IP literal only: InetAddress would otherwise resolve a host name through DNS.
        if (ip == null || !(IP_V4.matcher(ip).matches() || ip.contains(":"))) {
            throw new IllegalArgumentException("'" + ip + "' is not an IPv4 or IPv6 address");
        }
        try {
            return InetAddress.getByName(ip).getHostAddress();
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException("'" + ip + "' is not an IPv4 or IPv6 address", e);
        }
    }

    private static KeyPair newKeyPair() {
        try {
            KeyPairGenerator generator = KeyPairGenerator.getInstance("EC");
            generator.initialize(new ECGenParameterSpec("secp256r1"), RANDOM);
            return generator.generateKeyPair();
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("this JDK cannot make EC P-256 keys", e);
        }
    }

    private static String pem(Object object) {
        StringWriter text = new StringWriter();
        try (JcaPEMWriter writer = new JcaPEMWriter(text)) {
            writer.writeObject(object);
        } catch (IOException e) {
            throw new UncheckedIOException("writing PEM to memory failed", e);
        }
        return text.toString();
    }

    private static void writeFile(Path file, String text, boolean overwrite, boolean secret) throws IOException {
        if (overwrite) {
            Files.deleteIfExists(file);
        }
        try {
            if (secret) {
                createOwnerOnly(file);
                Files.writeString(file, text, StandardCharsets.US_ASCII, StandardOpenOption.TRUNCATE_EXISTING);
            } else {
                Files.writeString(file, text, StandardCharsets.US_ASCII, StandardOpenOption.CREATE_NEW);
            }
        } catch (FileAlreadyExistsException e) {
            throw new FileAlreadyExistsException(file.toString(), null, "exists; not overwriting it");
        }
    }

    private static void createOwnerOnly(Path file) throws IOException {
        try {
            Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        } catch (UnsupportedOperationException notPosix) {
            Files.createFile(file);
        }
    }
}
