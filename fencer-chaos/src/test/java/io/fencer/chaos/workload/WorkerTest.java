package io.fencer.chaos.workload;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.chaos.history.HistoryEvent;
import io.fencer.client.StaleWriteException;
import io.fencer.core.FencePolicy;
import io.fencer.core.FencingToken;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LimitExceededException;
import io.fencer.core.StaleTokenException;
import io.fencer.core.UnavailableException;
import org.junit.jupiter.api.Test;

/** How a worker records a failed write: only definite refusals are "fail"; everything else may have happened. */
class WorkerTest {
    private static final FencingToken TOKEN = new FencingToken("chaos", 7);

    @Test
    void outcomeOfWrite_staleRefusal_isFail() {
        assertThat(Worker.outcomeOfWrite(stale(false))).isEqualTo(HistoryEvent.Type.FAIL);
    }

    @Test
    void outcomeOfWrite_staleAfterARetry_isUnknown() {
        assertThat(Worker.outcomeOfWrite(stale(true))).isEqualTo(HistoryEvent.Type.UNKNOWN);
    }

    @Test
    void outcomeOfWrite_unitTimedOut_isFail() {
        assertThat(Worker.outcomeOfWrite(new LimitExceededException("unitTimeout", 10_000, "unit expired")))
                .isEqualTo(HistoryEvent.Type.FAIL);
    }

    @Test
    void outcomeOfWrite_unavailableOrUnitForgottenByARestartedStore_isUnknown() {
        assertThat(Worker.outcomeOfWrite(new UnavailableException("store down")))
                .isEqualTo(HistoryEvent.Type.UNKNOWN);
        assertThat(Worker.outcomeOfWrite(new InvalidArgumentException("unit_id", "ab", "unit 'ab' is unknown")))
                .isEqualTo(HistoryEvent.Type.UNKNOWN);
    }

    @Test
    void reasonOf_staleWriteRefusal_isTheCataloguesStaleToken() {
        assertThat(Worker.reasonOf(stale(false))).isEqualTo("STALE_TOKEN");
        assertThat(Worker.reasonOf(new LimitExceededException("unitTimeout", 10_000, "stale token unit expired")))
                .isEqualTo("LIMIT_EXCEEDED");
    }

    @Test
    void reasonOf_errorOutsideTheCatalogue_isEmpty() {
        assertThat(Worker.reasonOf(new IllegalStateException("stale token"))).isEmpty();
    }

    private static StaleWriteException stale(boolean retried) {
        return new StaleWriteException(new StaleTokenException("chaos", 7, 8, FencePolicy.AT_LEAST), TOKEN, retried,
                null);
    }

    @Test
    void believedEndMicros_leaseRunning_isNowPlusTheRemainder() {
        assertThat(Worker.believedEndMicros(5_000_000, java.time.Duration.ofMillis(1_250))).isEqualTo(6_250_000);
    }

    /** Regression: an ended local lease once recorded "now + 0" at every look, a belief moving on with the clock. */
    @Test
    void believedEndMicros_localLeaseEnded_isNoBelief() {
        assertThat(Worker.believedEndMicros(5_000_000, java.time.Duration.ZERO)).isEqualTo(Worker.NO_BELIEF);
    }
}
