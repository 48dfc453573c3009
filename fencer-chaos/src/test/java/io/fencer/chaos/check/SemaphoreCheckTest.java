package io.fencer.chaos.check;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.entry;

import io.fencer.chaos.history.HistoryEvent;
import io.fencer.chaos.history.HistoryEvent.Op;
import io.fencer.chaos.history.HistoryEvent.Type;
import io.fencer.chaos.workload.Workload;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@link SemaphoreCheck}: hand-built semaphore histories, each with the violations it must (or must not) produce. */
class SemaphoreCheckTest {
    private static final String SLOT_0 = "chaos/permit-0";
    private static final String SLOT_1 = "chaos/permit-1";
    private static final String SLOT_2 = "chaos/permit-2";

    /** Builds a semaphore history line by line, 100 us apart, each worker line naming its slot as the target. */
    static final class History {
        private final List<HistoryEvent> events = new ArrayList<>();
        private long timeMicros;

        History line(String process, Type type, Op op, long token, String value, long revision, String slot) {
            timeMicros += 100;
            events.add(new HistoryEvent(timeMicros, process, type, op, token, value, revision, slot, "", ""));
            return this;
        }

        History acquire(String process, String slot, long token) {
            return line(process, Type.INVOKE, Op.ACQUIRE, 0, "", 0, "")
                    .line(process, Type.OK, Op.ACQUIRE, token, "", 0, slot);
        }

        History read(String process, String slot, long token, long value) {
            return line(process, Type.INVOKE, Op.READ, token, "", 0, slot)
                    .line(process, Type.OK, Op.READ, token, Long.toString(value), 0, slot);
        }

        History write(String process, String slot, long token, long value, long revision) {
            return line(process, Type.INVOKE, Op.WRITE, token, Long.toString(value), 0, slot)
                    .line(process, Type.OK, Op.WRITE, token, Long.toString(value), revision, slot);
        }

        History refusedWrite(String process, String slot, long token, long value) {
            return line(process, Type.INVOKE, Op.WRITE, token, Long.toString(value), 0, slot)
                    .line(process, Type.FAIL, Op.WRITE, token, Long.toString(value), 0, slot);
        }

        History release(String process, String slot, long token) {
            return line(process, Type.INVOKE, Op.RELEASE, token, "", 0, slot)
                    .line(process, Type.OK, Op.RELEASE, token, "", 0, slot);
        }

        /** One cycle on {@code slot}: acquire, read {@code valueRead}, write it + 1 at {@code revision}, release. */
        History cycle(String process, String slot, long token, long valueRead, long revision) {
            return acquire(process, slot, token).read(process, slot, token, valueRead)
                    .write(process, slot, token, valueRead + 1, revision).release(process, slot, token);
        }

        History lease(String process, String slot, long token, long endMicros) {
            return line(process, Type.INFO, Op.LEASE, token, Long.toString(endMicros), 0, slot);
        }

        History nemesis(Op op, String target) {
            return line("nemesis", Type.INFO, op, 0, "", 0, target);
        }

        History finalRead(String slot, long value) {
            return line("final", Type.OK, Op.FINAL_READ, 0, Long.toString(value), 0, slot);
        }

        long lastMicros() {
            return timeMicros;
        }

        List<HistoryEvent> events() {
            return List.copyOf(events);
        }
    }

    private static List<Violation> of(CheckResult result, String check) {
        return result.violations().stream().filter(violation -> violation.check().equals(check)).toList();
    }

    @Test
    void check_whenEachSlotHasOneHolderAtATimeWithPauseAndRefusal_isValid() {
        History history = new History().cycle("w1", SLOT_0, 1, 0, 1).cycle("w2", SLOT_1, 1, 0, 1)
                // w3 is paused past its lease holding slot 0; w1 gets slot 0 next, and w3's write is refused.
                .acquire("w3", SLOT_0, 2).read("w3", SLOT_0, 2, 1).nemesis(Op.PAUSE, "w3")
                .cycle("w1", SLOT_0, 3, 1, 2).nemesis(Op.RESUME, "w3").refusedWrite("w3", SLOT_0, 2, 2)
                .cycle("w2", SLOT_1, 2, 1, 2).cycle("w3", SLOT_1, 3, 2, 3)
                .nemesis(Op.KILL, "w2").nemesis(Op.RESTART, "w2")
                .finalRead(SLOT_0, 2).finalRead(SLOT_1, 3);

        CheckResult result = Checker.check(history.events(), Workload.SEMAPHORE, 2);

        assertThat(result.violations()).isEmpty();
        assertThat(result.violationsByCheck()).containsOnlyKeys(CheckResult.TOKENS_MONOTONIC,
                CheckResult.ACKNOWLEDGED_SURVIVE, CheckResult.NO_LOST_UPDATE, CheckResult.GRANTS_INCREASE,
                CheckResult.LEASE_BELIEF, CheckResult.PERMITS_BOUNDED);
        assertThat(result.counts()).contains(entry("grants", 6L), entry("writes_ok", 5L),
                entry("writes_refused", 1L), entry("pauses", 1L), entry("kills", 1L), entry("final_value", 5L),
                entry("slots_used", 2L));
    }

    /** The faults every slot shares are counted once; a worker killed as the run ended is not one of them. */
    @Test
    void check_workerKilledAtTheEndOfTheRun_countsTheKillApartFromTheFaults() {
        History history = new History().cycle("w1", SLOT_0, 1, 0, 1).nemesis(Op.KILL, "w2")
                .nemesis(Op.RESTART, "w2").cycle("w2", SLOT_1, 1, 0, 1)
                .line("nemesis", Type.INFO, Op.KILL, 0, "end-of-run", 0, "w1")
                .finalRead(SLOT_0, 1).finalRead(SLOT_1, 1);

        CheckResult result = Checker.check(history.events(), Workload.SEMAPHORE, 2);

        assertThat(result.valid()).isTrue();
        assertThat(result.counts()).containsEntry("kills", 1L).containsEntry("kills_at_end", 1L);
    }

    @Test
    void check_whenPausedHolderWritesAfterTheNextHolderOfItsSlot_findsLostUpdateAndTwoHoldersOfTheSlot() {
        // The control: w1 paused holding slot 0 read 0; w2 got slot 0 and wrote 1; w1's write of 1 landed too.
        History history = new History().acquire("w1", SLOT_0, 1).read("w1", SLOT_0, 1, 0).nemesis(Op.PAUSE, "w1")
                .cycle("w3", SLOT_1, 1, 0, 1)
                .cycle("w2", SLOT_0, 2, 0, 1).nemesis(Op.RESUME, "w1")
                .write("w1", SLOT_0, 1, 1, 2).release("w1", SLOT_0, 1)
                .finalRead(SLOT_0, 1).finalRead(SLOT_1, 1);

        CheckResult result = Checker.check(history.events(), Workload.SEMAPHORE, 2);

        List<Violation> holders = of(result, CheckResult.PERMITS_BOUNDED);
        assertThat(holders).singleElement().satisfies(violation -> {
            assertThat(violation.process()).isEqualTo("w1");
            assertThat(violation.description()).startsWith(SLOT_0 + ": w1's write of 1 under token 1 (revision 2)")
                    .contains("older than w2's write of 1 under token 2 (revision 1)", "more than 2 holders");
        });
        assertThat(of(result, CheckResult.NO_LOST_UPDATE)).isNotEmpty()
                .allSatisfy(violation -> assertThat(violation.description()).startsWith(SLOT_0 + ": "));
        assertThat(of(result, CheckResult.TOKENS_MONOTONIC)).hasSize(1);
    }

    @Test
    void check_whenAStaleWriteRollsTheCounterBack_reportsTwoHoldersOnceNotForEveryLaterWrite() {
        // w1's stale write of 2 lands after w2's 3 (the counter goes back to 2); the writes after it rise again.
        History history = new History().cycle("w1", SLOT_0, 1, 0, 1).acquire("w1", SLOT_0, 2)
                .read("w1", SLOT_0, 2, 1).cycle("w2", SLOT_0, 3, 1, 2).cycle("w3", SLOT_0, 4, 2, 3)
                .write("w1", SLOT_0, 2, 2, 4).release("w1", SLOT_0, 2)
                .cycle("w2", SLOT_0, 5, 2, 5).cycle("w3", SLOT_0, 6, 3, 6).finalRead(SLOT_0, 4);

        CheckResult result = Checker.check(history.events(), Workload.SEMAPHORE, 2);

        assertThat(of(result, CheckResult.PERMITS_BOUNDED)).singleElement()
                .satisfies(violation -> assertThat(violation.description()).contains("w1's write of 2 under token 2"));
    }

    @Test
    void check_whenAGrantIsOfASlotBeyondThePermits_findsPermitsBounded() {
        History history = new History().cycle("w1", SLOT_0, 1, 0, 1).cycle("w2", SLOT_1, 1, 0, 1)
                .cycle("w3", SLOT_2, 1, 0, 1).finalRead(SLOT_0, 1).finalRead(SLOT_1, 1).finalRead(SLOT_2, 1);

        CheckResult result = Checker.check(history.events(), Workload.SEMAPHORE, 2);

        assertThat(of(result, CheckResult.PERMITS_BOUNDED)).singleElement().satisfies(violation -> {
            assertThat(violation.process()).isEqualTo("w3");
            assertThat(violation.description()).contains(SLOT_2, "not one of the 2 slots", "more than 2 holders");
        });
        assertThat(Checker.check(history.events(), Workload.SEMAPHORE, 3).valid()).isTrue();
    }

    @Test
    void check_whenSlotsReuseEachOthersTokenValues_isValid() {
        // Each slot has its own counter: a lower token on another slot, asked for later, is no regression.
        History history = new History().cycle("w1", SLOT_0, 5, 0, 1).cycle("w2", SLOT_1, 1, 0, 1)
                .cycle("w1", SLOT_1, 2, 1, 2).cycle("w2", SLOT_0, 6, 1, 2).finalRead(SLOT_0, 2).finalRead(SLOT_1, 2);

        CheckResult result = Checker.check(history.events(), Workload.SEMAPHORE, 2);

        assertThat(result.violations()).isEmpty();
    }

    @Test
    void check_whenATokenGoesDownWithinASlot_findsGrantsIncrease() {
        History history = new History().cycle("w1", SLOT_0, 5, 0, 1).cycle("w2", SLOT_0, 4, 1, 2)
                .finalRead(SLOT_0, 2);

        CheckResult result = Checker.check(history.events(), Workload.SEMAPHORE, 2);

        assertThat(of(result, CheckResult.GRANTS_INCREASE)).singleElement()
                .satisfies(violation -> assertThat(violation.description()).startsWith(SLOT_0 + ": w2"));
    }

    @Test
    void check_whenAnUnknownWriteLandedBetweenAcknowledgedOnes_isValid() {
        History history = new History().cycle("w1", SLOT_0, 1, 0, 1).acquire("w2", SLOT_0, 2)
                .read("w2", SLOT_0, 2, 1).line("w2", Type.INVOKE, Op.WRITE, 2, "2", 0, SLOT_0)
                .nemesis(Op.KILL, "w2").nemesis(Op.RESTART, "w2")
                .cycle("w3", SLOT_0, 3, 2, 3).finalRead(SLOT_0, 3);

        CheckResult result = Checker.check(history.events(), Workload.SEMAPHORE, 2);

        assertThat(result.violations()).isEmpty();
        assertThat(result.counts()).contains(entry("writes_unknown", 1L), entry("writes_ok", 2L));
    }

    @Test
    void check_whenALeaseBeliefOverlapsAGrantOfItsOwnSlot_findsItButNotForAnotherSlot() {
        History history = new History().acquire("w1", SLOT_0, 1);
        long endMicros = history.lastMicros() + 1_000_000;
        history.lease("w1", SLOT_0, 1, endMicros).acquire("w2", SLOT_1, 1).lease("w2", SLOT_1, 1, endMicros);
        CheckResult otherSlot = Checker.check(history.events(), Workload.SEMAPHORE, 2);
        history.acquire("w3", SLOT_0, 2).lease("w3", SLOT_0, 2, endMicros);

        CheckResult sameSlot = Checker.check(history.events(), Workload.SEMAPHORE, 2);

        assertThat(of(otherSlot, CheckResult.LEASE_BELIEF)).isEmpty();
        assertThat(of(sameSlot, CheckResult.LEASE_BELIEF)).singleElement().satisfies(violation ->
                assertThat(violation.description()).startsWith(SLOT_0 + ": w1 believed it held token 1"));
    }

    @Test
    void check_whenAWriteNamesNoSlot_throwsNamingTheEvent() {
        History history = new History().acquire("w1", SLOT_0, 1).line("w1", Type.INVOKE, Op.WRITE, 1, "1", 0, "");

        assertThatThrownBy(() -> Checker.check(history.events(), Workload.SEMAPHORE, 2))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("without its slot")
                .hasMessageContaining("\"w1\"");
    }

    /**
     * Regression (CI): a worker killed mid-release gets its completion from the harness ("worker killed before the
     * outcome"), which names no slot; the checker threw. It belongs to that worker's last invocation's slot.
     */
    @Test
    void check_whenTheHarnessCompletesAKilledWorkersReleaseWithoutSlot_takesTheInvocationsSlot() {
        History history = new History().acquire("w1", SLOT_0, 1).read("w1", SLOT_0, 1, 0)
                .write("w1", SLOT_0, 1, 1, 1).line("w1", Type.INVOKE, Op.RELEASE, 1, "", 0, SLOT_0)
                .nemesis(Op.KILL, "w1").line("w1", Type.UNKNOWN, Op.RELEASE, 1, "", 0, "")
                .cycle("w2", SLOT_0, 2, 1, 2).finalRead(SLOT_0, 2);

        CheckResult result = Checker.check(history.events(), Workload.SEMAPHORE, 2);

        assertThat(result.violations()).isEmpty();
    }

    @Test
    void check_whenSemaphoreHistoryWithoutPermitCount_throws() {
        assertThatThrownBy(() -> Checker.check(List.of(), Workload.SEMAPHORE))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("permit count");
    }
}
