package io.fencer.server.locks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.core.SessionUnauthenticatedException;
import io.fencer.core.Ticker;
import java.time.Duration;
import java.util.Base64;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class SessionSecretsTest {
    private final AtomicLong nanos = new AtomicLong(1_000);
    private final Ticker ticker = nanos::get;

    @Test
    void generate_drawsTwoHundredFiftySixRandomBitsAsBase64Url() {
        Set<String> secrets = new HashSet<>();
        for (int i = 0; i < 1_000; i++) {
            String secret = SessionSecrets.generate();
            assertThat(secret).hasSize(43).matches("[A-Za-z0-9_-]+");
            assertThat(Base64.getUrlDecoder().decode(secret)).hasSize(SessionSecrets.SECRET_BYTES);
            secrets.add(secret);
        }
        assertThat(secrets).hasSize(1_000);
    }

    @Test
    void forOpen_sameIdentityAndRequestId_returnsTheSameSecretOtherwiseANewOne() {
        SessionSecrets secrets = new SessionSecrets(ticker);

        String first = secrets.forOpen("alice", "open-1");

        assertThat(secrets.forOpen("alice", "open-1")).isEqualTo(first);
        assertThat(secrets.forOpen("mallory", "open-1")).as("another identity's retry").isNotEqualTo(first);
        assertThat(secrets.forOpen("alice", "open-2")).isNotEqualTo(first);
        assertThat(secrets.forOpen("alice", "")).as("no request id: never remembered")
                .isNotEqualTo(secrets.forOpen("alice", ""));
        assertThat(secrets.size()).isEqualTo(3);
    }

    @Test
    void forOpen_afterTheAgeLimit_forgetsTheOpenAndDrawsANewSecret() {
        SessionSecrets secrets = new SessionSecrets(ticker, 10, Duration.ofSeconds(60));
        String first = secrets.forOpen("alice", "open-1");

        nanos.addAndGet(Duration.ofSeconds(59).toNanos());
        String within = secrets.forOpen("alice", "open-1");
        nanos.addAndGet(Duration.ofSeconds(1).toNanos());
        String after = secrets.forOpen("alice", "open-1");

        assertThat(within).isEqualTo(first);
        assertThat(after).isNotEqualTo(first);
    }

    @Test
    void forOpen_beyondTheCountLimit_forgetsTheOldestFirst() {
        SessionSecrets secrets = new SessionSecrets(ticker, 2, Duration.ofMinutes(1));
        String oldest = secrets.forOpen("alice", "open-1");
        String middle = secrets.forOpen("alice", "open-2");

        secrets.forOpen("alice", "open-3");

        assertThat(secrets.size()).isEqualTo(2);
        assertThat(secrets.forOpen("alice", "open-2")).isEqualTo(middle);
        assertThat(secrets.forOpen("alice", "open-1")).as("evicted, so a new secret").isNotEqualTo(oldest);
        assertThat(secrets.toString()).doesNotContain(middle).contains("2 opens remembered");
    }

    @Test
    void defaults_areTenThousandOpensForOneMinute() {
        assertThat(SessionSecrets.ENTRIES_MAX).isEqualTo(10_000);
        assertThat(SessionSecrets.AGE_MAX).isEqualTo(Duration.ofMinutes(1));
    }

    @Test
    void forOpen_retryWithTheSameKey_returnsTheSecretAndWithAnotherKeyOrNoneIsRefused() {
        SessionSecrets secrets = new SessionSecrets(ticker);
        byte[] key = bytes(16, 1);

        String first = secrets.forOpen("alice", "open-1", key);

        assertThat(secrets.forOpen("alice", "open-1", key.clone())).isEqualTo(first);
        assertThatThrownBy(() -> secrets.forOpen("alice", "open-1", bytes(16, 2)))
                .isInstanceOfSatisfying(SessionUnauthenticatedException.class, e -> {
                    assertThat(e.sessionId()).isZero();
                    assertThat(e.getMessage()).contains("request_id 'open-1'", "does not present the retry_key",
                            "open a new session with a new request_id").doesNotContain(first);
                });
        assertThatThrownBy(() -> secrets.forOpen("alice", "open-1", null))
                .isInstanceOf(SessionUnauthenticatedException.class);
    }

    @Test
    void forOpen_anonymousRetry_getsTheSecretOnlyWithTheOpensKey() {
        SessionSecrets secrets = new SessionSecrets(ticker);
        byte[] key = bytes(32, 7);

        String victims = secrets.forOpen("anonymous", "victim-open", key);
        String keyless = secrets.forOpen("anonymous", "keyless-open", null);

        assertThat(secrets.forOpen("anonymous", "victim-open", key)).as("the opener's own retry").isEqualTo(victims);
        assertThatThrownBy(() -> secrets.forOpen("anonymous", "victim-open", null))
                .as("a replay of the request id alone").isInstanceOf(SessionUnauthenticatedException.class);
        assertThatThrownBy(() -> secrets.forOpen("anonymous", "victim-open", bytes(32, 8)))
                .as("a replay with a guessed key").isInstanceOf(SessionUnauthenticatedException.class);
        assertThatThrownBy(() -> secrets.forOpen("anonymous", "keyless-open", null))
                .as("a keyless anonymous open is never answered again")
                .isInstanceOfSatisfying(SessionUnauthenticatedException.class, e -> assertThat(e.getMessage())
                        .contains("anonymous and carried no retry_key").doesNotContain(keyless));
        assertThatThrownBy(() -> secrets.forOpen("anonymous", "keyless-open", bytes(16, 1)))
                .isInstanceOf(SessionUnauthenticatedException.class);
    }

    @Test
    void forOpen_namedIdentityWithoutKeys_keepsAnsweringItsOwnRetries() {
        SessionSecrets secrets = new SessionSecrets(ticker);

        String first = secrets.forOpen("alice", "open-1", null);

        assertThat(secrets.forOpen("alice", "open-1", null)).isEqualTo(first);
        assertThat(secrets.forOpen("alice", "open-1", bytes(16, 3))).as("a key the open did not carry")
                .isEqualTo(first);
        assertThat(secrets.forOpen("mallory", "open-1", null)).isNotEqualTo(first);
    }

    private static byte[] bytes(int count, int fill) {
        byte[] bytes = new byte[count];
        java.util.Arrays.fill(bytes, (byte) fill);
        return bytes;
    }
}
