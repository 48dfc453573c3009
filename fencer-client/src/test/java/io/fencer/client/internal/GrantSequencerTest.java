package io.fencer.client.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.api.v1.AcquireResponse;
import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.Leadership;
import io.fencer.client.Session;
import io.fencer.core.FencingToken;
import io.fencer.core.InternalException;
import io.fencer.core.TokenKeys;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Base64;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** {@link Grant#sequencer()}: the wire form exactly as the lock service sent it, signed or not. */
class GrantSequencerTest {
    private final FakeServer server = FakeServer.start();
    private final FencerClient client = Fencer.newBuilder().endpoints(server.endpoint())
            .callTimeout(Duration.ofSeconds(10)).build();

    @AfterEach
    void tearDown() {
        client.close();
        server.close();
    }

    private void grantWithSequencer(String sequencer) {
        server.locks.onAcquire = request -> AcquireResponse.newBuilder().setAcquired(true)
                .setToken(FakeLocks.token(request.getLock(), 7).toBuilder().setSequencer(sequencer)).build();
    }

    @Test
    void sequencer_signedByTheService_isKeptExactly() {
        String signed = new FencingToken("orders", 7).sequencer(TokenKeys.generate("k1"));
        grantWithSequencer(signed);
        Session session = client.openSession(Duration.ofSeconds(10));

        Grant grant = session.lock("orders").acquire(Duration.ofSeconds(5));
        Leadership leadership = session.election("orders").campaign(Duration.ofSeconds(5));

        assertThat(grant.token()).isEqualTo(new FencingToken("orders", 7));
        assertThat(grant.sequencer()).isEqualTo(signed).isNotEqualTo(grant.token().sequencer());
        assertThat(leadership.sequencer()).isEqualTo(signed);
    }

    @Test
    void sequencer_notSentByTheService_isThePlainForm() {
        Session session = client.openSession(Duration.ofSeconds(10));

        Grant grant = session.lock("orders").acquire(Duration.ofSeconds(5));

        assertThat(grant.sequencer()).isEqualTo(grant.token().sequencer());
    }

    @Test
    void sequencer_unsignedFormOfTheToken_isKeptAsSent() {
        grantWithSequencer(new FencingToken("orders", 7).sequencer());

        Grant grant = client.openSession(Duration.ofSeconds(10)).lock("orders").acquire(Duration.ofSeconds(1));

        assertThat(grant.sequencer()).isEqualTo("fencer1." + Base64.getUrlEncoder().withoutPadding()
                .encodeToString("orders".getBytes(StandardCharsets.UTF_8)) + ".7");
    }

    @Test
    void sequencer_namingAnotherToken_isInternalError() {
        grantWithSequencer(new FencingToken("orders", 8).sequencer());
        Session session = client.openSession(Duration.ofSeconds(10));

        assertThatThrownBy(() -> session.lock("orders").acquire(Duration.ofSeconds(5)))
                .isInstanceOf(InternalException.class).hasMessageContaining("names orders#8");
    }
}
