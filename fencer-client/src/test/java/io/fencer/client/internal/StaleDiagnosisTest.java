package io.fencer.client.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.api.v1.EndCause;
import io.fencer.api.v1.ValidateResponse;
import io.fencer.client.FencedStore;
import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.StaleDiagnosis;
import io.fencer.client.StaleDiagnosis.Kind;
import io.fencer.client.StaleWriteException;
import io.fencer.client.TokenStatus;
import io.fencer.core.FencingToken;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link StaleWriteException#diagnose()}: a real store refusal (engine over gRPC) diagnosed by asking a lock service
 * peer ({@link FakeLocks}) whose Validate answers are scripted, one per verdict.
 */
class StaleDiagnosisTest {
    private static final FencingToken T31 = new FencingToken("orders", 31);
    private static final FencingToken T32 = new FencingToken("orders", 32);

    @TempDir
    Path dir;
    private FakeStore storeServer;
    private FakeServer lockServer;
    private FencerClient lockService;
    private FencedStore store;
    private final List<LogRecord> warnings = new CopyOnWriteArrayList<>();
    private final Logger diagnosticsLog = Logger.getLogger(StaleDiagnostics.class.getName());
    private final Handler capture = new Handler() {
        @Override
        public void publish(LogRecord record) {
            if (record.getLevel().intValue() >= Level.WARNING.intValue()) {
                warnings.add(record);
            }
        }

        @Override
        public void flush() {}

        @Override
        public void close() {}
    };

    @BeforeEach
    void start() {
        storeServer = FakeStore.start(dir.resolve("store"));
        lockServer = FakeServer.start();
        lockService = Fencer.newBuilder().endpoints(lockServer.endpoint()).callTimeout(Duration.ofSeconds(2)).build();
        store = Fencer.store(storeServer.endpoint(), lockService);
        diagnosticsLog.addHandler(capture);
    }

    @AfterEach
    void stop() {
        diagnosticsLog.removeHandler(capture);
        store.close();
        lockService.close();
        lockServer.close();
        storeServer.close();
    }

    /** Writes with {@code accepted}, then returns the refusal of {@code presented}. */
    private StaleWriteException refusal(FencingToken accepted, FencingToken presented) {
        store.put("orders", "k", "current", accepted.sequencer());
        try {
            store.put("orders", "k", "stale", presented.sequencer());
        } catch (StaleWriteException e) {
            return e;
        }
        throw new AssertionError("the store admitted " + presented + " after " + accepted);
    }

    private void validateAnswers(ValidateResponse.Status status, long lastToken, EndCause ended) {
        lockServer.locks.onValidate = request -> ValidateResponse.newBuilder().setStatus(status)
                .setLastToken(lastToken).setSupersededBy(status == ValidateResponse.Status.SUPERSEDED ? lastToken : 0)
                .setEnded(ended).build();
    }

    @Test
    void diagnose_supersededByTheAcceptedToken_isSupersededByIt() {
        validateAnswers(ValidateResponse.Status.SUPERSEDED, 32, EndCause.END_CAUSE_UNSPECIFIED);
        StaleWriteException stale = refusal(T32, T31);

        StaleDiagnosis diagnosis = stale.diagnose();

        assertThat(diagnosis.kind()).isEqualTo(Kind.SUPERSEDED);
        assertThat(diagnosis.supersededBy()).isEqualTo(32);
        assertThat(diagnosis.presented()).isEqualTo(T31);
        assertThat(diagnosis.accepted()).isEqualTo(32);
        assertThat(diagnosis.detail()).isEqualTo("orders#31 was superseded: a later grant exists, the lock service's "
                + "latest token for lock 'orders' is orders#32, which wrote to scope 'orders'");
        assertThat(warnings).isEmpty();
        assertThat(lockServer.locks.count("Validate")).isEqualTo(1);
    }

    @Test
    void diagnose_supersededByAnEvenLaterGrantWithEndCause_namesTheLatestAndHowTheGrantEnded() {
        validateAnswers(ValidateResponse.Status.SUPERSEDED, 40, EndCause.END_CAUSE_SESSION_EXPIRED);

        StaleDiagnosis diagnosis = refusal(T32, T31).diagnose();

        assertThat(diagnosis.kind()).isEqualTo(Kind.SUPERSEDED);
        assertThat(diagnosis.supersededBy()).isEqualTo(40);
        assertThat(diagnosis.endCause()).isEqualTo("SESSION_EXPIRED");
        assertThat(diagnosis.detail()).contains("orders#40", "scope 'orders' accepted orders#32",
                "grant ended: session expired");
    }

    @Test
    void diagnose_lockServiceSaysPresentedIsCurrent_isFencingInconsistencyLoggedAsWarning() {
        validateAnswers(ValidateResponse.Status.CURRENT, 31, EndCause.END_CAUSE_UNSPECIFIED);

        StaleDiagnosis diagnosis = refusal(T32, T31).diagnose();

        assertThat(diagnosis.kind()).isEqualTo(Kind.FENCING_INCONSISTENCY);
        assertThat(diagnosis.detail()).startsWith("FENCING INCONSISTENCY").contains("forged");
        assertThat(warnings).singleElement().satisfies(record -> assertThat(record.getMessage())
                .contains("orders#31", "orders#32"));
    }

    @Test
    void diagnose_storeAcceptedATokenNeverIssued_isFencingInconsistency() {
        validateAnswers(ValidateResponse.Status.SUPERSEDED, 31_000, EndCause.END_CAUSE_UNSPECIFIED);
        StaleWriteException stale = refusal(new FencingToken("orders", 99_999), T31);

        assertThat(stale.diagnose().kind()).isEqualTo(Kind.FENCING_INCONSISTENCY);
        validateAnswers(ValidateResponse.Status.NEVER_ISSUED, 20, EndCause.END_CAUSE_UNSPECIFIED);
        assertThat(stale.diagnose().kind()).isEqualTo(Kind.FENCING_INCONSISTENCY);
        assertThat(warnings).hasSize(2);
    }

    @Test
    void judge_strictScopeRefusingTheCurrentTokensSecondWrite_isAlreadyUsedNotAnInconsistency() {
        TokenStatus current = new TokenStatus(TokenStatus.Status.CURRENT, 32, 0, "billing", Duration.ofSeconds(5),
                null);

        StaleDiagnosis diagnosis = StaleDiagnostics.judge("orders", T32, 32, current);

        assertThat(diagnosis.kind()).isEqualTo(Kind.ALREADY_USED);
        assertThat(diagnosis.detail()).contains("policy STRICT");
        assertThat(warnings).isEmpty();
    }

    @Test
    void judge_strictScopeRefusingAnEndedGrant_isEndedWithItsCause() {
        TokenStatus ended = new TokenStatus(TokenStatus.Status.ENDED, 32, 0, null, Duration.ZERO, "RELEASED");

        StaleDiagnosis diagnosis = StaleDiagnostics.judge("orders", T32, 32, ended);

        assertThat(diagnosis.kind()).isEqualTo(Kind.ENDED);
        assertThat(diagnosis.endCause()).isEqualTo("RELEASED");
        assertThat(diagnosis.detail()).contains("(released)");
    }

    @Test
    void judge_endedButTheStoreAcceptedHigher_isFencingInconsistency() {
        TokenStatus ended = new TokenStatus(TokenStatus.Status.ENDED, 31, 0, null, Duration.ZERO,
                "SESSION_EXPIRED");

        assertThat(StaleDiagnostics.judge("orders", T31, 32, ended).kind()).isEqualTo(Kind.FENCING_INCONSISTENCY);
    }

    @Test
    void diagnose_lockServiceUnreachable_isUnknownWithTheReason() {
        StaleWriteException stale = refusal(T32, T31);
        lockServer.close();

        StaleDiagnosis diagnosis = stale.diagnose();

        assertThat(diagnosis.kind()).isEqualTo(Kind.UNKNOWN);
        assertThat(diagnosis.detail()).contains("could not be asked about orders#31");
    }

    @Test
    void diagnose_noLockServiceGiven_isUnknownSayingSo() {
        try (FencedStore alone = Fencer.store(storeServer.endpoint())) {
            alone.put("orders", "k", "v", T32.sequencer());
            StaleWriteException stale = (StaleWriteException) org.assertj.core.api.Assertions.catchThrowable(
                    () -> alone.put("orders", "k", "w", T31.sequencer()));

            StaleDiagnosis diagnosis = stale.diagnose();

            assertThat(diagnosis.kind()).isEqualTo(Kind.UNKNOWN);
            assertThat(diagnosis.detail()).contains("no lock service client was given");
        }
    }

    @Test
    void diagnose_refusalAboveThePresentedToken_isProgrammerErrorWhenAcceptedIsLower() {
        assertThatThrownBy(() -> StaleDiagnostics.diagnose(null, "orders", T32, 31))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("cannot have accepted 31");
    }
}
