package io.fencer.chaos.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.chaos.bench.FailoverPause.Event;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The failover bench's arithmetic: which grant ends a pause, which failed calls count, the summary figures. */
class FailoverPauseTest {
    private static final long MILLI = 1_000_000;
    private static final long KILL = 10_000 * MILLI;
    private static final long GONE = KILL + 3 * MILLI;

    @Test
    void of_grantsBeforeAndAfterKill_pauseRunsFromKillToFirstGrantAfterProcessGone() {
        List<Event> events = List.of(Event.grant(KILL - 5 * MILLI), Event.grant(KILL - MILLI),
                Event.grant(KILL + 900 * MILLI), Event.grant(KILL + 905 * MILLI));

        FailoverPause pause = FailoverPause.of(KILL, GONE, events);

        assertThat(pause.measured()).isTrue();
        assertThat(pause.nextGrantNanos()).isEqualTo(KILL + 900 * MILLI);
        assertThat(pause.pauseMillis()).isEqualTo(900);
        assertThat(pause.failedCalls()).isZero();
    }

    @Test
    void of_grantAnsweredWhileKilledLeaderDying_doesNotEndPause() {
        // answered after the signal but before the process was seen gone: the old leader's last answer
        List<Event> events = List.of(Event.grant(KILL + MILLI), Event.grant(KILL + 1_200 * MILLI));

        FailoverPause pause = FailoverPause.of(KILL, GONE, events);

        assertThat(pause.pauseMillis()).isEqualTo(1_200);
    }

    @Test
    void of_failedCallsBetweenKillAndGrant_countsOnlyThose() {
        List<Event> events = List.of(Event.failure(KILL - 2 * MILLI), Event.grant(KILL - MILLI),
                Event.failure(KILL + 10 * MILLI), Event.failure(KILL + 500 * MILLI), Event.grant(KILL + 700 * MILLI),
                Event.failure(KILL + 800 * MILLI));

        FailoverPause pause = FailoverPause.of(KILL, GONE, events);

        assertThat(pause.pauseMillis()).isEqualTo(700);
        assertThat(pause.failedCalls()).isEqualTo(2);
    }

    @Test
    void of_noGrantAfterKill_isUnmeasuredAndCountsEveryFailure() {
        List<Event> events = List.of(Event.grant(KILL - MILLI), Event.failure(KILL + MILLI),
                Event.failure(KILL + 2_000 * MILLI));

        FailoverPause pause = FailoverPause.of(KILL, GONE, events);

        assertThat(pause.measured()).isFalse();
        assertThat(pause.pauseMillis()).isEqualTo(-1);
        assertThat(pause.failedCalls()).isEqualTo(2);
    }

    @Test
    void of_goneBeforeKill_isRefused() {
        assertThatThrownBy(() -> FailoverPause.of(KILL, KILL - 1, List.of()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("gone before it was killed");
    }

    @Test
    void median_oddAndEvenCounts_middleOrMeanOfMiddleTwo() {
        assertThat(FailoverBench.median(List.of(900L, 300L, 1_500L))).isEqualTo(900);
        assertThat(FailoverBench.median(List.of(900L, 300L, 1_500L, 1_100L))).isEqualTo(1_000);
        assertThat(FailoverBench.median(List.of())).isEqualTo(-1);
    }

    @Test
    void result_unmeasuredRound_leftOutOfPausesAndNotComplete() {
        FailoverBench.Settings settings = new FailoverBench.Settings(3, 3, Duration.ofSeconds(10));
        FailoverBench.Result result = new FailoverBench.Result(settings, List.of(
                new FailoverBench.Round(1, "lock-n1", 400, 800, 2, 0, true),
                new FailoverBench.Round(2, "lock-n2", -1, -1, 7, 1, true),
                new FailoverBench.Round(3, "lock-n3", 500, 1_200, 1, 0, true)), List.of(11L, 12L, 13L));

        assertThat(result.pausesMillis()).containsExactly(800L, 1_200L);
        assertThat(result.leaderKnownMillis()).containsExactly(400L, 500L);
        assertThat(result.medianPauseMillis()).isEqualTo(1_000);
        assertThat(result.minPauseMillis()).isEqualTo(800);
        assertThat(result.maxPauseMillis()).isEqualTo(1_200);
        assertThat(result.failedCalls()).isEqualTo(10);
        assertThat(result.sessionsLost()).isEqualTo(1);
        assertThat(result.complete()).isFalse();
    }

    @Test
    void settings_outOfRange_refusedNamingLimitAndValue() {
        assertThatThrownBy(() -> new FailoverBench.Settings(4, 1, Duration.ofSeconds(10)))
                .hasMessage("peers must be 3 or 5, not 4");
        assertThatThrownBy(() -> new FailoverBench.Settings(3, 101, Duration.ofSeconds(10)))
                .hasMessage("kills 101 is outside [1, 100]");
        assertThatThrownBy(() -> new FailoverBench.Settings(3, 1, Duration.ofMillis(999)))
                .hasMessage("ttl 999 ms is outside [1000 ms, 3600000 ms]");
    }
}
