package io.fencer.server.raft;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.awaitility.Awaitility.await;

import io.fencer.core.Ticker;
import io.fencer.lock.Limits;
import io.fencer.server.PeerAuth;
import io.fencer.server.ServerConfig;
import io.fencer.server.raft.PeerAdmission.Refusal;
import io.fencer.server.tls.CertificateAuthority;
import io.fencer.server.tls.TlsMaterial;
import io.fencer.testing.TestTls;
import java.io.IOException;
import java.math.BigInteger;
import java.net.InetAddress;
import java.nio.file.Path;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.SecureRandom;
import java.security.cert.X509Certificate;
import java.security.spec.ECGenParameterSpec;
import java.time.Duration;
import java.time.Instant;
import java.util.Date;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLServerSocket;
import javax.net.ssl.SSLSocket;
import javax.security.auth.x500.X500Principal;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.protocol.RaftPeer;
import org.apache.ratis.thirdparty.com.google.protobuf.Empty;
import org.apache.ratis.thirdparty.com.google.protobuf.Int32Value;
import org.apache.ratis.thirdparty.com.google.protobuf.MessageLite;
import org.apache.ratis.thirdparty.io.netty.channel.EventLoopGroup;
import org.apache.ratis.thirdparty.io.netty.channel.nio.NioEventLoopGroup;
import org.apache.ratis.thirdparty.io.netty.channel.socket.nio.NioSocketChannel;
import org.apache.ratis.thirdparty.io.netty.handler.ssl.OpenSsl;
import org.apache.ratis.thirdparty.io.netty.handler.ssl.SslContext;
import org.apache.ratis.thirdparty.io.netty.handler.ssl.SslContextBuilder;
import org.bouncycastle.asn1.x509.BasicConstraints;
import org.bouncycastle.asn1.x509.ExtendedKeyUsage;
import org.bouncycastle.asn1.x509.Extension;
import org.bouncycastle.asn1.x509.GeneralName;
import org.bouncycastle.asn1.x509.GeneralNames;
import org.bouncycastle.asn1.x509.KeyPurposeId;
import org.bouncycastle.asn1.x509.KeyUsage;
import org.bouncycastle.cert.X509v3CertificateBuilder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cert.jcajce.JcaX509v3CertificateBuilder;
import org.bouncycastle.operator.jcajce.JcaContentSignerBuilder;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Which certificates of the group's own CA the Raft port takes for a peer's, with real certificates: a peer's
 * server certificate (TLS server and client authentication, as {@code fencer certs} issues) is admitted; one whose
 * extended key usage names other uses (code signing, a TLS server alone, a TLS client alone) is refused, and so is a
 * listener presenting one to a dialling peer. One without the extension, which restricts no use, is admitted, as
 * browsers and Go's TLS accept it. A real peer n1, a group of one with TLS alone (no secret), listens.
 */
class PeerCertificatesTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final SecureRandom RANDOM = new SecureRandom();

    @TempDir
    Path directory;
    private TestTls tls;
    private TlsMaterial material;
    private RaftNode raft;
    private PeerRpc rpc;
    private int raftPort;
    private EventLoopGroup linkGroup;

    @BeforeEach
    void start() throws Exception {
        tls = TestTls.create(directory.resolve("certs"));
        ServerConfig config = ServerConfig.defaults(directory.resolve("n1")).withPorts(0, 0, 0)
                .withTls(tls.serverFiles(true)).withPeerAuth(PeerAuth.tlsOnly());
        material = tls.serverFiles(true).load();
        raft = RaftNode.start(config, material, new RaftLockStateMachine(Limits.DEFAULT), () -> 0);
        await().atMost(WAIT).until(raft::isLeaderReady);
        rpc = (PeerRpc) raft.server().getServerRpc();
        raftPort = rpc.getInetSocketAddress().getPort();
        linkGroup = new NioEventLoopGroup(1);
    }

    @AfterEach
    void stop() throws Exception {
        linkGroup.shutdownGracefully(0, 100, TimeUnit.MILLISECONDS);
        raft.close();
    }

    @Test
    void raftPort_peersServerCertificate_isAdmitted() throws Exception {
        assertThat(formatLevelAs(tls.server())).isEqualTo(Int32Value.of(
                io.fencer.lock.LockStateMachine.FORMAT_LEVEL));
    }

    @Test
    void raftPort_certificateOfTheCaForCodeSigning_isRefusedAtTheTlsHandshake() throws Exception {
        CertificateAuthority.Issued codeSigning = issue("signer", KeyPurposeId.id_kp_codeSigning);

        assertThat(catchThrowableOfType(IOException.class, () -> formatLevelAs(codeSigning))).isNotNull();
        await().atMost(WAIT).until(() -> rpc.refusals(Refusal.TLS) == 1);
        assertThat(rpc.refusals(Refusal.CERTIFICATE)).isZero();
    }

    @Test
    void raftPort_certificateOfTheCaForATlsServerAlone_isRefusedAtTheTlsHandshake() throws Exception {
        CertificateAuthority.Issued serverAlone = issue("server-alone", KeyPurposeId.id_kp_serverAuth);

        assertThat(catchThrowableOfType(IOException.class, () -> formatLevelAs(serverAlone)))
                .as("a dialling peer authenticates as a TLS client").isNotNull();
        await().atMost(WAIT).until(() -> rpc.refusals(Refusal.TLS) == 1);
    }

    @Test
    void raftPort_clientCertificateOfTheCa_isRefusedAfterTheTlsHandshake() throws Exception {
        assertThat(catchThrowableOfType(IOException.class, () -> formatLevelAs(tls.client("app")))).isNotNull();
        await().atMost(WAIT).until(() -> rpc.refusals(Refusal.CERTIFICATE) == 1);
    }

    @Test
    void raftPort_certificateOfTheCaWithoutExtendedKeyUsage_isAdmitted() throws Exception {
        CertificateAuthority.Issued anyUse = issue("any-use");

        assertThat(formatLevelAs(anyUse)).isEqualTo(Int32Value.of(io.fencer.lock.LockStateMachine.FORMAT_LEVEL));
        assertThat(rpc.refusals(Refusal.TLS) + rpc.refusals(Refusal.CERTIFICATE)).isZero();
    }

    /**
     * Regression: with Netty's OpenSSL engine (the one the port uses where it loads, as here) the port logged every
     * refused certificate as "its TLS handshake failed: General OpenSslEngine problem", saying neither whose
     * certificate nor why. The line now names the certificate and the reason the group's trust gave.
     */
    @Test
    void raftPort_refusedCertificate_isLoggedNamingTheCertificateAndWhy() throws Exception {
        assertThat(OpenSsl.isAvailable()).as("the OpenSSL engine, whose refusals said nothing").isTrue();
        CertificateAuthority.Issued codeSigning = issue("signer", KeyPurposeId.id_kp_codeSigning);
        try (RaftPortPeers.StderrCapture log = new RaftPortPeers.StderrCapture()) {
            assertThat(catchThrowableOfType(IOException.class, () -> formatLevelAs(codeSigning))).isNotNull();
            await().atMost(WAIT).until(() -> rpc.refusals(Refusal.TLS) == 1);
            await().atMost(WAIT).until(log::text, text -> text.contains("refused a Raft connection from"));

            assertThat(log.text()).contains("n1: refused a Raft connection from 127.0.0.1:").contains(
                    ": its TLS handshake failed: its certificate 'CN=signer' (serial "
                    + codeSigning.certificate().getSerialNumber().toString(16) + ", issued by '"
                    + tls.ca().ca().certificate().getSubjectX500Principal().getName() + "') is refused: Extended key "
                    + "usage does not permit use for TLS client authentication")
                    .doesNotContain("General OpenSslEngine problem");
        }
    }

    /**
     * Regression, the other direction: a dialling peer that refused a listener's certificate failed its calls with
     * "cannot send a FORMAT_LEVEL to peer n1" alone, the line its log repeats. It now says whose certificate and why.
     */
    @Test
    void link_listenerCertificateRefused_failsTheCallNamingTheCertificateAndWhy() throws Exception {
        CertificateAuthority.Issued codeSigning = issue("signer", KeyPurposeId.id_kp_codeSigning);

        Throwable failure = listenerHandshakeFailure(codeSigning);

        assertThat(failure).hasMessageContaining("to peer n1: its TLS handshake failed: its certificate 'CN=signer' "
                + "(serial " + codeSigning.certificate().getSerialNumber().toString(16) + ", issued by '"
                + tls.ca().ca().certificate().getSubjectX500Principal().getName() + "') is refused: Extended key "
                + "usage does not permit use for TLS server authentication")
                .hasMessageNotContaining("General OpenSslEngine problem");
    }

    /**
     * Regression: a TLS handshake that failed before a call's write reached the TLS handler closed the link first, and
     * the call failed "the link was closed", naming no certificate (once under load in the full suite). Here the call
     * comes after the handshake failed and closed the link.
     */
    @Test
    void call_afterTheTlsHandshakeFailedAndClosedTheLink_failsNamingTheCertificateAndWhy() throws Exception {
        CertificateAuthority.Issued codeSigning = issue("signer", KeyPurposeId.id_kp_codeSigning);
        SSLServerSocket listener = listening(codeSigning);
        CompletableFuture<Boolean> handshake = acceptingOnce(listener);

        try (PeerLink link = dial(listener)) {
            assertThat(handshake.get(WAIT.toSeconds(), TimeUnit.SECONDS)).as("the dialler ended the handshake")
                    .isFalse();
            await().atMost(WAIT).until(() -> !link.isOpen());
            CompletableFuture<MessageLite> call = link.call(PeerFrames.Kind.FORMAT_LEVEL, Empty.getDefaultInstance());

            assertThat(call).failsWithin(WAIT).withThrowableOfType(java.util.concurrent.ExecutionException.class)
                    .havingCause().withMessageContaining("the link is closed: the link to peer n1: its TLS handshake "
                            + "failed: its certificate 'CN=signer'");
        }
    }

    /** The other direction: a dialling peer refuses a listener whose certificate of the CA is for code signing. */
    @Test
    void link_listenerPresentingACodeSigningCertificateOfTheCa_isRefusedByTheDialler() throws Exception {
        boolean codeSigning = listenerHandshake(issue("signer", KeyPurposeId.id_kp_codeSigning));
        boolean peers = listenerHandshake(tls.server());

        assertThat(codeSigning).as("the dialler ended the TLS handshake").isFalse();
        assertThat(peers).as("the control: a peer's server certificate").isTrue();
    }

    /**
     * Listens once on a port of its own presenting {@code certificate}, as a peer would, and dials it with a peer's
     * own TLS (what {@link PeerTransport} sets up): returns whether the TLS handshake completed.
     */
    private boolean listenerHandshake(CertificateAuthority.Issued certificate) throws Exception {
        return listenerHandshake(certificate, null);
    }

    /** As {@link #listenerHandshake}, returning why the dialler's call failed. */
    private Throwable listenerHandshakeFailure(CertificateAuthority.Issued certificate) throws Exception {
        CompletableFuture<Throwable> failure = new CompletableFuture<>();
        listenerHandshake(certificate, failure);
        return failure.get(WAIT.toSeconds(), TimeUnit.SECONDS);
    }

    private boolean listenerHandshake(CertificateAuthority.Issued certificate, CompletableFuture<Throwable> failure)
            throws Exception {
        SSLServerSocket listener = listening(certificate);
        CompletableFuture<Boolean> handshake = acceptingOnce(listener);
        try (PeerLink link = dial(listener)) {
            CompletableFuture<MessageLite> call = link.call(PeerFrames.Kind.FORMAT_LEVEL, Empty.getDefaultInstance());
            if (failure != null) {
                call.whenComplete((answer, error) -> failure.complete(error));
            }
            boolean completed = handshake.get(WAIT.toSeconds(), TimeUnit.SECONDS); // the listener waits for the call
            if (failure != null) {
                failure.get(WAIT.toSeconds(), TimeUnit.SECONDS); // before the link closes, which fails it otherwise
            }
            return completed;
        }
    }

    /** A TLS listener on a port of its own presenting {@code certificate}, as a peer would. */
    private SSLServerSocket listening(CertificateAuthority.Issued certificate) throws Exception {
        SSLServerSocket listener = (SSLServerSocket) tls.jdkContext(certificate).getServerSocketFactory()
                .createServerSocket(0, 1, InetAddress.getLoopbackAddress());
        listener.setNeedClientAuth(true);
        return listener;
    }

    /** Accepts one connection on {@code listener} and completes with whether its TLS handshake completed. */
    private static CompletableFuture<Boolean> acceptingOnce(SSLServerSocket listener) {
        return CompletableFuture.supplyAsync(() -> {
            try (listener; SSLSocket accepted = (SSLSocket) listener.accept()) {
                accepted.setSoTimeout(20_000);
                accepted.startHandshake();
                accepted.getInputStream().read(); // the handshake is over only once the dialler's last message came
                return true;
            } catch (IOException e) {
                return false;
            }
        });
    }

    /** Dials {@code listener} as peer n2 dials n1, with a peer's own TLS (what {@link PeerTransport} sets up). */
    private PeerLink dial(SSLServerSocket listener) throws IOException {
        RaftProperties properties = new RaftProperties();
        PeerTransport.configure(properties, "127.0.0.1", 0, "n2");
        SslContext peerTls = PeerTransport.Settings.of(properties, material, null, Ticker.system(), null).clientTls();
        RaftPeer peer = RaftPeer.newBuilder().setId("n1").setAddress("127.0.0.1:" + listener.getLocalPort()).build();
        return PeerLink.connect(peer, linkGroup, NioSocketChannel.class, peerTls, null, 8 << 20, Duration.ofSeconds(5));
    }

    /** Dials n1 over TLS presenting {@code certificate} and asks its format level: the answer, or why not. */
    private MessageLite formatLevelAs(CertificateAuthority.Issued certificate) throws IOException {
        SslContext context = SslContextBuilder.forClient()
                .keyManager(certificate.privateKey(), certificate.certificate())
                .trustManager(tls.ca().ca().certificate()).protocols(TlsMaterial.PROTOCOLS).build();
        RaftPeer peer = RaftPeer.newBuilder().setId("n1").setAddress("127.0.0.1:" + raftPort).build();
        try (PeerLink link = PeerLink.connect(peer, linkGroup, NioSocketChannel.class, context, null, 8 << 20,
                Duration.ofSeconds(5))) {
            return link.callAndWait(PeerFrames.Kind.FORMAT_LEVEL, Empty.getDefaultInstance(), WAIT);
        }
    }

    /**
     * Issues a certificate of the group's CA for 127.0.0.1 whose extended key usage is {@code purposes}; none: a
     * certificate without the extension.
     */
    private CertificateAuthority.Issued issue(String name, KeyPurposeId... purposes) throws Exception {
        KeyPairGenerator generator = KeyPairGenerator.getInstance("EC");
        generator.initialize(new ECGenParameterSpec("secp256r1"));
        KeyPair keys = generator.generateKeyPair();
        CertificateAuthority.Issued ca = tls.ca().ca();
        Instant now = Instant.now();
        X509v3CertificateBuilder builder = new JcaX509v3CertificateBuilder(ca.certificate(),
                new BigInteger(127, RANDOM).setBit(0), Date.from(now.minus(Duration.ofMinutes(5))),
                Date.from(now.plus(TestTls.VALIDITY)), new X500Principal("CN=" + name), keys.getPublic())
                .addExtension(Extension.basicConstraints, true, new BasicConstraints(false))
                .addExtension(Extension.keyUsage, true, new KeyUsage(KeyUsage.digitalSignature))
                .addExtension(Extension.subjectAlternativeName, false,
                        new GeneralNames(new GeneralName(GeneralName.iPAddress, "127.0.0.1")));
        if (purposes.length > 0) {
            builder.addExtension(Extension.extendedKeyUsage, false, new ExtendedKeyUsage(purposes));
        }
        X509Certificate certificate = new JcaX509CertificateConverter().getCertificate(
                builder.build(new JcaContentSignerBuilder("SHA256withECDSA").build(ca.privateKey())));
        return new CertificateAuthority.Issued(certificate, keys.getPrivate());
    }
}
