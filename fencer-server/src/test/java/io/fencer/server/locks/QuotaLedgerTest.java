package io.fencer.server.locks;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.core.LimitExceededException;
import io.fencer.lock.IdentityUsage;
import io.fencer.server.IdentityQuotas;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The leader's reservations against applied usage, without a server: commands in flight count until applied. */
class QuotaLedgerTest {
    private final Map<String, IdentityUsage> applied = new HashMap<>();
    private final QuotaLedger ledger = new QuotaLedger(identity -> applied.getOrDefault(identity,
            IdentityUsage.NONE), identity -> identity.equals("big") ? new IdentityQuotas(100, 100, 100)
            : new IdentityQuotas(2, 3, 1));

    @Test
    void reserve_countsAppliedUsageAndCommandsInFlight() {
        applied.put("alice", new IdentityUsage(1, 0, 0));
        QuotaLedger.Reservation inFlight = ledger.reserve("alice", 1, 0, 0);

        assertThatThrownBy(() -> ledger.reserve("alice", 1, 0, 0)).isInstanceOfSatisfying(
                LimitExceededException.class, e -> {
                    assertThat(e.limit()).isEqualTo("sessionsPerIdentityMax");
                    assertThat(e.limitValue()).isEqualTo(2);
                    assertThat(e.identity()).isEqualTo("alice");
                    assertThat(e.getMessage()).contains("1 sessions open and 1 more being added");
                });
        assertThat(ledger.reserve("big", 1, 0, 0)).as("another identity has its own quota").isNotNull();

        inFlight.release();
        inFlight.release(); // given back once, however often released
        assertThat(ledger.inFlight("alice")).containsExactly(0, 0, 0);
        assertThat(ledger.reserve("alice", 1, 0, 0)).isNotNull();
    }

    @Test
    void reserve_locksAndWaiters_eachAgainstItsOwnQuota() {
        applied.put("alice", new IdentityUsage(1, 2, 0));
        QuotaLedger.Reservation wait = ledger.reserve("alice", 0, 1, 1);

        assertThatThrownBy(() -> ledger.reserve("alice", 0, 1, 0)).isInstanceOfSatisfying(
                LimitExceededException.class, e -> assertThat(e.limit()).isEqualTo("locksPerIdentityMax"));
        wait.release();
        applied.put("alice", new IdentityUsage(1, 2, 1));
        assertThatThrownBy(() -> ledger.reserve("alice", 0, 1, 1)).isInstanceOfSatisfying(
                LimitExceededException.class, e -> assertThat(e.limit()).isEqualTo("waitersPerIdentityMax"));
        assertThat(ledger.reserve("alice", 0, 1, 0)).as("a try asks for no wait").isNotNull();
    }

    @Test
    void none_reservesNothingAndReleasesNothing() {
        applied.put("alice", new IdentityUsage(2, 0, 0));
        QuotaLedger.Reservation none = ledger.none();

        none.release();

        assertThat(ledger.inFlight("alice")).containsExactly(0, 0, 0);
        assertThatThrownBy(() -> ledger.reserve("alice", 1, 0, 0)).isInstanceOf(LimitExceededException.class);
    }
}
