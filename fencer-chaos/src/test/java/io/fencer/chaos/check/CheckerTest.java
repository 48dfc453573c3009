package io.fencer.chaos.check;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.entry;

import io.fencer.chaos.history.HistoryEvent;
import io.fencer.chaos.history.HistoryEvent.Op;
import io.fencer.chaos.history.HistoryEvent.Type;
import io.fencer.chaos.history.HistoryJson;
import io.fencer.chaos.workload.Workload;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** {@link Checker#check}: hand-built histories, each with the violations it must (or must not) produce. */
class CheckerTest {
    private static final String TOKENS = CheckResult.TOKENS_MONOTONIC;
    private static final String SURVIVE = CheckResult.ACKNOWLEDGED_SURVIVE;
    private static final String LOST_UPDATE = CheckResult.NO_LOST_UPDATE;
    private static final String SET_COMPLETE = CheckResult.SET_COMPLETE;
    private static final String GRANTS = CheckResult.GRANTS_INCREASE;
    private static final String LEASE = CheckResult.LEASE_BELIEF;

    /** Builds a history line by line, each line 100 us after the previous one, as a worker thread records it. */
    static final class History {
        private final List<HistoryEvent> events = new ArrayList<>();
        private long timeMicros;

        History line(String process, Type type, Op op, long token, String value, long revision, String target,
                String error) {
            timeMicros += 100;
            events.add(new HistoryEvent(timeMicros, process, type, op, token, value, revision, target, error, ""));
            return this;
        }

        History invoke(String process, Op op, long token, String value) {
            return line(process, Type.INVOKE, op, token, value, 0, "", "");
        }

        History ok(String process, Op op, long token, String value, long revision) {
            return line(process, Type.OK, op, token, value, revision, "", "");
        }

        History fail(String process, Op op, long token, String value, String error) {
            return line(process, Type.FAIL, op, token, value, 0, "", error);
        }

        History unknown(String process, Op op, long token, String value, String error) {
            return line(process, Type.UNKNOWN, op, token, value, 0, "", error);
        }

        /** The harness's fault or restart of {@code target}. */
        History nemesis(Op op, String target) {
            return line("nemesis", Type.INFO, op, 0, "", 0, target, "");
        }

        /**
         * A line as a history file holds it: {@code members} are its JSON members after {@code time_us}, for the
         * fields the other builders do not write.
         */
        History json(String members) {
            timeMicros += 100;
            events.add(HistoryJson.parse("{\"time_us\":" + timeMicros + "," + members + "}"));
            return this;
        }

        History sessionLost(String process) {
            return line(process, Type.INFO, Op.SESSION_LOST, 0, "", 0, "", "");
        }

        /** The worker's belief that its local lease under {@code token} ends at {@code endMicros}. */
        History lease(String process, long token, long endMicros) {
            return line(process, Type.INFO, Op.LEASE, token, Long.toString(endMicros), 0, "", "");
        }

        History finalRead(String value) {
            return ok("final", Op.FINAL_READ, 0, value, 0);
        }

        History acquire(String process, long token) {
            return invoke(process, Op.ACQUIRE, 0, "").ok(process, Op.ACQUIRE, token, "", 0);
        }

        History read(String process, long token, String value) {
            return invoke(process, Op.READ, token, "").ok(process, Op.READ, token, value, 0);
        }

        History write(String process, long token, long value, long revision) {
            return invoke(process, Op.WRITE, token, Long.toString(value))
                    .ok(process, Op.WRITE, token, Long.toString(value), revision);
        }

        History add(String process, long token, String element, long revision) {
            return invoke(process, Op.ADD, token, element).ok(process, Op.ADD, token, element, revision);
        }

        History release(String process, long token) {
            return invoke(process, Op.RELEASE, token, "").ok(process, Op.RELEASE, token, "", 0);
        }

        /** One counter cycle: acquire, read {@code valueRead}, write it + 1 at {@code revision}, release. */
        History cycle(String process, long token, long valueRead, long revision) {
            return acquire(process, token).read(process, token, Long.toString(valueRead))
                    .write(process, token, valueRead + 1, revision).release(process, token);
        }

        long lastMicros() {
            return timeMicros;
        }

        List<HistoryEvent> events() {
            return List.copyOf(events);
        }
    }

    /** The violations of one check. */
    private static List<Violation> of(CheckResult result, String check) {
        return result.violations().stream().filter(violation -> violation.check().equals(check)).toList();
    }

    @Test
    void check_whenCleanCounterHistoryWithPausesRefusalsUnknownsAndKills_isValid() {
        History history = new History().cycle("w1", 1, 0, 1).cycle("w2", 2, 1, 2)
                .acquire("w1", 3).read("w1", 3, "2").nemesis(Op.PAUSE, "w1")
                .cycle("w2", 4, 2, 3).nemesis(Op.RESUME, "w1")
                .invoke("w1", Op.WRITE, 3, "3").fail("w1", Op.WRITE, 3, "3", "stale token: presented 3, accepted 4")
                .invoke("w1", Op.RELEASE, 3, "").fail("w1", Op.RELEASE, 3, "", "not the holder").sessionLost("w1")
                .cycle("w2", 5, 3, 4)
                // An unknown write that did apply (at revision 5): the next worker reads 5.
                .acquire("w1", 6).read("w1", 6, "4").invoke("w1", Op.WRITE, 6, "5")
                .unknown("w1", Op.WRITE, 6, "5", "deadline exceeded").release("w1", 6)
                .nemesis(Op.KILL, "store").nemesis(Op.RESTART, "store")
                .cycle("w2", 7, 5, 6)
                // A worker killed in the middle of a write that did not apply.
                .acquire("w3", 8).read("w3", 8, "6").invoke("w3", Op.WRITE, 8, "7").nemesis(Op.KILL, "w3")
                .nemesis(Op.KILL, "lock-n1").nemesis(Op.RESTART, "lock-n1")
                // The holder writes twice under one grant: an equal token is not a decrease.
                .acquire("w1", 9).read("w1", 9, "6").write("w1", 9, 7, 7).write("w1", 9, 8, 8).release("w1", 9)
                .finalRead("8");

        CheckResult result = Checker.check(history.events(), Workload.COUNTER);

        assertThat(result.violations()).isEmpty();
        assertThat(result.valid()).isTrue();
        assertThat(result.workload()).isEqualTo(Workload.COUNTER);
        assertThat(result.violationsByCheck()).containsExactly(entry(TOKENS, 0), entry(SURVIVE, 0),
                entry(LOST_UPDATE, 0), entry(GRANTS, 0), entry(LEASE, 0));
        assertThat(result.counts()).containsExactly(entry("grants", 9L), entry("writes_ok", 7L),
                entry("writes_refused", 1L), entry("writes_stale", 1L), entry("writes_unknown", 2L),
                entry("pauses", 1L), entry("kills", 3L), entry("kills_at_end", 0L),
                entry("session_losses", 1L), entry("failovers", 1L), entry("store_failovers", 0L),
                entry("partitions", 0L), entry("flaky", 0L),
                entry("membership_changes", 0L), entry("membership_refused", 0L), entry("final_value", 8L));
    }

    /**
     * Regression: the chaos runs' "stale writes refused" assertions read {@code writes_refused}, which also counts a
     * unit that expired during a pause (or a full write queue): a run where fencing refused nothing passed them.
     */
    @Test
    void check_whenOnlyAnExpiredUnitWasRefused_countsNoStaleWrite() {
        History history = new History().cycle("w1", 1, 0, 1).acquire("w2", 2).read("w2", 2, "1")
                .nemesis(Op.PAUSE, "w2").nemesis(Op.RESUME, "w2").invoke("w2", Op.WRITE, 2, "2")
                .fail("w2", Op.WRITE, 2, "2", "unit 7 of scope 'counter' (token 2) was aborted: not committed within"
                        + " its timeout PT10S; nothing was applied")
                .release("w2", 2).cycle("w3", 3, 1, 2)
                .invoke("w1", Op.WRITE, 1, "3").fail("w1", Op.WRITE, 1, "3", "writesQueuedMax")
                .finalRead("2");

        CheckResult result = Checker.check(history.events(), Workload.COUNTER);

        assertThat(result.valid()).isTrue();
        assertThat(result.counts()).containsEntry("writes_refused", 2L).containsEntry("writes_stale", 0L);
    }

    /** A history written before refusals carried their catalogue reason: a stale one is known by its message. */
    @Test
    void check_staleRefusalWithoutAReason_countsItStaleByItsMessage() {
        History history = new History().acquire("w1", 1).read("w1", 1, "0").cycle("w2", 2, 0, 1)
                .invoke("w1", Op.WRITE, 1, "1")
                .fail("w1", Op.WRITE, 1, "1", "stale token counter#1 refused by scope 'counter': accepted 2")
                .release("w1", 1).finalRead("1");

        assertThat(Checker.check(history.events(), Workload.COUNTER).counts())
                .containsEntry("writes_refused", 1L).containsEntry("writes_stale", 1L);
    }

    /** A stale refusal is known by its catalogue reason, whatever its message says. */
    @Test
    void check_staleRefusalWithARewordedMessage_countsItStale() {
        History history = new History().acquire("w1", 1).read("w1", 1, "0").cycle("w2", 2, 0, 1)
                .invoke("w1", Op.WRITE, 1, "1")
                .json("\"process\":\"w1\",\"type\":\"fail\",\"op\":\"write\",\"token\":1,\"value\":\"1\","
                        + "\"error\":\"token counter#1 superseded: scope 'counter' accepted counter#2\","
                        + "\"reason\":\"STALE_TOKEN\"")
                .release("w1", 1).finalRead("1");

        assertThat(Checker.check(history.events(), Workload.COUNTER).counts())
                .containsEntry("writes_refused", 1L).containsEntry("writes_stale", 1L);
    }

    /** Another refusal whose message happens to begin like a stale one's is not what fencing refused. */
    @Test
    void check_otherRefusalWhoseMessageBeginsWithStaleToken_isNotCountedStale() {
        History history = new History().acquire("w1", 1).read("w1", 1, "0")
                .invoke("w1", Op.WRITE, 1, "1")
                .json("\"process\":\"w1\",\"type\":\"fail\",\"op\":\"write\",\"token\":1,\"value\":\"1\","
                        + "\"error\":\"stale token queue: writesQueuedMax 64 reached\",\"reason\":\"LIMIT_EXCEEDED\"")
                .release("w1", 1).cycle("w2", 2, 0, 1).finalRead("1");

        assertThat(Checker.check(history.events(), Workload.COUNTER).counts())
                .containsEntry("writes_refused", 1L).containsEntry("writes_stale", 0L);
    }

    /**
     * A worker killed because it did not stop when the run ended was not a fault: the run's kills, which its tests
     * assert, count the injected ones only.
     */
    @Test
    void check_workerKilledAtTheEndOfTheRun_countsTheKillApartFromTheFaults() {
        History history = new History().cycle("w1", 1, 0, 1).nemesis(Op.KILL, "w2").nemesis(Op.RESTART, "w2")
                .cycle("w2", 2, 1, 2).acquire("w3", 3).read("w3", 3, "2").invoke("w3", Op.WRITE, 3, "3")
                .json("\"process\":\"nemesis\",\"type\":\"info\",\"op\":\"kill\",\"value\":\"end-of-run\","
                        + "\"target\":\"w3\"")
                .unknown("w3", Op.WRITE, 3, "3", "worker killed at the end of the run before the outcome")
                .finalRead("2");

        CheckResult result = Checker.check(history.events(), Workload.COUNTER);

        assertThat(result.valid()).isTrue();
        assertThat(result.counts()).containsEntry("kills", 1L).containsEntry("kills_at_end", 1L)
                .containsEntry("failovers", 0L).containsEntry("writes_unknown", 1L);
    }

    @Test
    void check_whenTheReplicatedStoresLeaderIsKilled_countsAStoreFailoverBesideTheFailover() {
        History history = new History().cycle("w1", 1, 0, 1)
                .line("nemesis", Type.INFO, Op.KILL, 0, HistoryEvent.STORE_LEADER, 0, "lock-n2", "")
                .nemesis(Op.RESTART, "lock-n2").nemesis(Op.KILL, "lock-n1").cycle("w2", 2, 1, 2).finalRead("2");

        CheckResult result = Checker.check(history.events(), Workload.COUNTER);

        assertThat(result.valid()).isTrue();
        assertThat(result.counts()).containsEntry("store_failovers", 1L).containsEntry("failovers", 2L)
                .containsEntry("kills", 2L);
    }

    @Test
    void check_whenMembershipChangesAndARefusal_countsTheChangesNotTheRefusal() {
        History history = new History().cycle("w1", 1, 0, 1)
                .nemesis(Op.ADD_PEER, "lock-n4").nemesis(Op.PROMOTE_PEER, "lock-n4")
                .nemesis(Op.MEMBERSHIP_REFUSED, "lock-n1").cycle("w2", 2, 1, 2)
                .nemesis(Op.REMOVE_PEER, "lock-n1").cycle("w1", 3, 2, 3).finalRead("3");

        CheckResult result = Checker.check(history.events(), Workload.COUNTER);

        assertThat(result.valid()).isTrue();
        assertThat(result.counts()).containsEntry("membership_changes", 3L).containsEntry("membership_refused", 1L)
                .containsEntry("failovers", 0L).containsEntry("kills", 0L);
    }

    /** The paused-client timeline: five increments, then A reads 5 under token 7 and pauses past its lease. */
    private static History seedLostUpdateWithoutFencing() {
        return new History().cycle("w1", 2, 0, 1).cycle("w2", 3, 1, 2).cycle("w1", 4, 2, 3).cycle("w2", 5, 3, 4)
                .cycle("w1", 6, 4, 5)
                .acquire("w1", 7).read("w1", 7, "5").nemesis(Op.PAUSE, "w1")
                .cycle("w2", 8, 5, 6)
                .nemesis(Op.RESUME, "w1").write("w1", 7, 6, 7).release("w1", 7)
                .finalRead("6");
    }

    @Test
    void check_whenStaleWriteAppliedAfterNewerWithoutFencing_reportsTokensMonotonicAndLostUpdate() {
        History history = seedLostUpdateWithoutFencing();

        CheckResult result = Checker.check(history.events(), Workload.COUNTER);

        assertThat(result.violationsByCheck()).containsExactly(entry(TOKENS, 1), entry(SURVIVE, 0),
                entry(LOST_UPDATE, 2), entry(GRANTS, 0), entry(LEASE, 0));
        Violation stale = of(result, TOKENS).get(0);
        assertThat(stale.process()).isEqualTo("w1");
        assertThat(stale.token()).isEqualTo(7);
        assertThat(stale.description()).isEqualTo("write of 6 by w1 under token 7 applied at revision 7 after a write"
                + " under token 8 (revision 6, by w2)");
        assertThat(of(result, LOST_UPDATE)).extracting(Violation::description).containsExactly(
                "final value 6 is below the 7 acknowledged increments: at least 1 acknowledged increment lost",
                "write of 6 by w1 under token 7 (revision 7) wrote the same value as the acknowledged write of 6 by"
                        + " w2 under token 8 (revision 6): one increment was lost");
        assertThat(result.violations()).extracting(Violation::timeMicros).isSorted();
    }

    @Test
    void check_whenStaleWriteRefusedWithFencing_isValid() {
        History history = new History().cycle("w1", 2, 0, 1).cycle("w2", 3, 1, 2).cycle("w1", 4, 2, 3)
                .cycle("w2", 5, 3, 4).cycle("w1", 6, 4, 5)
                .acquire("w1", 7).read("w1", 7, "5").nemesis(Op.PAUSE, "w1")
                .cycle("w2", 8, 5, 6)
                .nemesis(Op.RESUME, "w1").invoke("w1", Op.WRITE, 7, "6").fail("w1", Op.WRITE, 7, "6", "stale")
                .finalRead("6");

        CheckResult result = Checker.check(history.events(), Workload.COUNTER);

        assertThat(result.violations()).isEmpty();
        assertThat(result.counts()).containsEntry("writes_refused", 1L).containsEntry("writes_ok", 6L);
    }

    @Test
    void check_whenStoreLostAnAcknowledgedWrite_reportsAcknowledgedSurviveViolation() {
        History history = new History().cycle("w1", 1, 0, 1).cycle("w2", 2, 1, 2).cycle("w1", 3, 2, 3)
                .nemesis(Op.KILL, "store").nemesis(Op.RESTART, "store").finalRead("2");

        CheckResult result = Checker.check(history.events(), Workload.COUNTER);

        assertThat(result.violationsByCheck()).containsExactly(entry(TOKENS, 0), entry(SURVIVE, 1),
                entry(LOST_UPDATE, 1), entry(GRANTS, 0), entry(LEASE, 0));
        Violation lost = of(result, SURVIVE).get(0);
        assertThat(lost.process()).isEqualTo("w1");
        assertThat(lost.token()).isEqualTo(3);
        assertThat(lost.description())
                .isEqualTo("acknowledged write of 3 by w1 under token 3 (revision 3) lost: the final value is 2");
    }

    @Test
    void check_whenTwoAcknowledgedWritesShareARevision_reportsAcknowledgedSurviveViolation() {
        // The store forgot revision 2 in a restart, then gave revision 2 again.
        History history = new History().cycle("w1", 1, 0, 1).cycle("w2", 2, 1, 2)
                .nemesis(Op.KILL, "store").nemesis(Op.RESTART, "store")
                .cycle("w1", 3, 1, 2).finalRead("2");

        CheckResult result = Checker.check(history.events(), Workload.COUNTER);

        assertThat(of(result, SURVIVE)).singleElement().satisfies(violation -> {
            assertThat(violation.process()).isEqualTo("w1");
            assertThat(violation.description()).isEqualTo("write of 2 by w1 under token 3 acknowledged at revision"
                    + " 2, as was the write of 2 by w2 under token 2: the store lost one");
        });
        assertThat(result.violationsByCheck()).containsEntry(TOKENS, 0).containsEntry(SURVIVE, 1);
    }

    @ParameterizedTest(name = "{0}, final value {1}")
    @CsvSource({"unknown, 2", "unknown, 3", "killed, 2", "killed, 3"})
    void check_whenUnknownIncrementDidOrDidNotApply_isValid(String outcome, long finalValue) {
        History history = new History().cycle("w1", 1, 0, 1).cycle("w2", 2, 1, 2)
                .acquire("w3", 3).read("w3", 3, "2").invoke("w3", Op.WRITE, 3, "3");
        if (outcome.equals("unknown")) {
            history.unknown("w3", Op.WRITE, 3, "3", "store unreachable").release("w3", 3);
        } else {
            history.nemesis(Op.KILL, "w3");
        }
        history.finalRead(Long.toString(finalValue));

        CheckResult result = Checker.check(history.events(), Workload.COUNTER);

        assertThat(result.violations()).isEmpty();
        assertThat(result.counts()).containsEntry("writes_ok", 2L).containsEntry("writes_unknown", 1L)
                .containsEntry("final_value", finalValue);
    }

    @Test
    void check_whenFinalValueExceedsAcknowledgedPlusUnknown_reportsPhantomIncrements() {
        History history = new History().cycle("w1", 1, 0, 1).cycle("w2", 2, 1, 2)
                .acquire("w3", 3).read("w3", 3, "2").invoke("w3", Op.WRITE, 3, "3")
                .unknown("w3", Op.WRITE, 3, "3", "timeout").finalRead("5");

        CheckResult result = Checker.check(history.events(), Workload.COUNTER);

        assertThat(of(result, LOST_UPDATE)).singleElement().satisfies(violation -> {
            assertThat(violation.process()).isEqualTo("final");
            assertThat(violation.timeMicros()).isZero();
            assertThat(violation.description()).isEqualTo("final value 5 exceeds the 2 acknowledged plus 1 unknown"
                    + " increments: 2 phantom increments");
        });
    }

    @Test
    void check_whenSetAddLostWithoutFencing_reportsSetCompleteViolation() {
        History history = new History().acquire("w1", 1).read("w1", 1, "").add("w1", 1, "w1-1", 1).release("w1", 1)
                .acquire("w1", 2).read("w1", 2, "w1-1").nemesis(Op.PAUSE, "w1")
                .acquire("w2", 3).read("w2", 3, "w1-1").add("w2", 3, "w2-1", 2).release("w2", 3)
                .nemesis(Op.RESUME, "w1").add("w1", 2, "w1-2", 3).release("w1", 2)
                .finalRead("w1-1,w1-2");

        CheckResult result = Checker.check(history.events(), Workload.SET);

        assertThat(result.violationsByCheck()).containsExactly(entry(TOKENS, 1), entry(SURVIVE, 0),
                entry(SET_COMPLETE, 1), entry(GRANTS, 0), entry(LEASE, 0));
        assertThat(of(result, SET_COMPLETE)).singleElement().satisfies(violation -> {
            assertThat(violation.process()).isEqualTo("w2");
            assertThat(violation.token()).isEqualTo(3);
            assertThat(violation.description()).isEqualTo("acknowledged add of w2-1 by w2 under token 3 (revision 2)"
                    + " is missing from the final set");
        });
        assertThat(result.counts()).containsEntry("writes_ok", 3L).containsEntry("final_elements", 2L)
                .doesNotContainKey("final_value");
    }

    @Test
    void check_whenFinalSetLacksWhatTheLastAddWrote_reportsAcknowledgedSurviveViolation() {
        History history = new History().acquire("w1", 1).read("w1", 1, "").add("w1", 1, "w1-1", 1).release("w1", 1)
                .acquire("w2", 2).read("w2", 2, "w1-1").add("w2", 2, "w2-1", 2).release("w2", 2)
                .finalRead("w2-1");

        CheckResult result = Checker.check(history.events(), Workload.SET);

        assertThat(of(result, SURVIVE)).singleElement().satisfies(violation -> assertThat(violation.description())
                .isEqualTo("final set lacks 1 of the 2 elements written by the last acknowledged add of w2-1 by w2"
                        + " under token 2 (revision 2): w1-1"));
        assertThat(of(result, SET_COMPLETE)).extracting(Violation::process).containsExactly("w1");
    }

    @Test
    void check_whenCleanSetHistory_isValid() {
        History history = new History().acquire("w1", 1).read("w1", 1, "").add("w1", 1, "w1-1", 1).release("w1", 1)
                .acquire("w2", 2).read("w2", 2, "w1-1").add("w2", 2, "w2-1", 2).release("w2", 2)
                .acquire("w1", 3).read("w1", 3, "w1-1,w2-1").invoke("w1", Op.ADD, 3, "w1-2")
                .unknown("w1", Op.ADD, 3, "w1-2", "timeout").finalRead("w1-1,w2-1");

        CheckResult result = Checker.check(history.events(), Workload.SET);

        assertThat(result.violations()).isEmpty();
        assertThat(result.violationsByCheck()).containsExactly(entry(TOKENS, 0), entry(SURVIVE, 0),
                entry(SET_COMPLETE, 0), entry(GRANTS, 0), entry(LEASE, 0));
    }

    @Test
    void check_whenTokenReusedByAnotherProcess_reportsGrantsIncreaseViolation() {
        // w1 getting 5 back at the end is its own grant, but w2 held 5 in between: a reuse too.
        History history = new History().acquire("w1", 5).release("w1", 5).acquire("w2", 5).release("w2", 5)
                .acquire("w1", 5).finalRead("");

        CheckResult result = Checker.check(history.events(), Workload.COUNTER);

        assertThat(result.violationsByCheck()).containsExactly(entry(TOKENS, 0), entry(SURVIVE, 0),
                entry(LOST_UPDATE, 0), entry(GRANTS, 2), entry(LEASE, 0));
        assertThat(of(result, GRANTS)).extracting(Violation::process).containsExactly("w2", "w1");
        assertThat(of(result, GRANTS).get(0)).satisfies(violation -> {
            assertThat(violation.token()).isEqualTo(5);
            assertThat(violation.description()).startsWith("w2 granted token 5 at ")
                    .contains("the token already granted to w1 at ");
        });
        assertThat(of(result, GRANTS).get(1).description()).contains("the token already granted to w2 at ");
    }

    @Test
    void check_whenLowerTokenGrantedAfterFailover_reportsGrantsIncreaseViolationNamingTheFailover() {
        History history = new History().acquire("w1", 7).release("w1", 7).nemesis(Op.KILL, "lock-n1");
        long killMicros = history.lastMicros();
        history.nemesis(Op.RESTART, "lock-n1").acquire("w2", 5).release("w2", 5).finalRead("");

        CheckResult result = Checker.check(history.events(), Workload.COUNTER);

        assertThat(result.counts()).containsEntry("failovers", 1L).containsEntry("kills", 1L);
        assertThat(of(result, GRANTS)).singleElement().satisfies(violation -> {
            assertThat(violation.process()).isEqualTo("w2");
            assertThat(violation.token()).isEqualTo(5);
            assertThat(violation.description()).startsWith("w2 granted token 5 after the failover at "
                    + Checker.seconds(killMicros) + " (kill lock-n1), below token 7 granted to w1 at ");
        });
    }

    @Test
    void check_whenSameProcessAcquiresItsOwnGrantAgain_isValid() {
        History history = new History().acquire("w1", 4).sessionLost("w1").acquire("w1", 4).release("w1", 4)
                .acquire("w2", 5).release("w2", 5).finalRead("");

        CheckResult result = Checker.check(history.events(), Workload.COUNTER);

        assertThat(result.violations()).isEmpty();
        assertThat(result.counts()).containsEntry("grants", 3L).containsEntry("session_losses", 1L);
    }

    /**
     * What a chaos run's history showed across a failover: w3 released token 24 (its release re-sent meanwhile) and
     * asked again before w2's grant of 25 was acknowledged, so the two grants overlap and order nothing, yet w3's
     * acquire was answered with 24, the grant it had released.
     */
    @Test
    void check_whenAProcessIsGrantedATokenItHadReleased_reportsGrantsIncreaseViolation() {
        History history = new History().acquire("w3", 24).release("w3", 24).invoke("w3", Op.ACQUIRE, 0, "")
                .acquire("w2", 25).ok("w3", Op.ACQUIRE, 24, "", 0).release("w3", 24).release("w2", 25)
                .finalRead("");

        CheckResult result = Checker.check(history.events(), Workload.COUNTER);

        assertThat(result.violations()).singleElement().satisfies(violation -> {
            assertThat(violation.check()).isEqualTo(CheckResult.GRANTS_INCREASE);
            assertThat(violation.process()).isEqualTo("w3");
            assertThat(violation.token()).isEqualTo(24);
            assertThat(violation.description()).contains("w3 was granted token 24", "had begun to release");
        });
    }

    @Test
    void check_whenGrantsOverlapInTime_doesNotOrderThem() {
        // w2 asked before w1's grant was acknowledged, so its lower token is not ordered after w1's.
        History history = new History().invoke("w2", Op.ACQUIRE, 0, "").invoke("w1", Op.ACQUIRE, 0, "")
                .ok("w1", Op.ACQUIRE, 8, "", 0).ok("w2", Op.ACQUIRE, 7, "", 0).finalRead("");

        CheckResult result = Checker.check(history.events(), Workload.COUNTER);

        assertThat(result.violations()).isEmpty();
    }

    @Test
    void check_whenCounterHistoryHasNoFinalRead_reportsOneViolationPerFinalStateCheck() {
        History history = new History().cycle("w1", 1, 0, 1);

        CheckResult result = Checker.check(history.events(), Workload.COUNTER);

        assertThat(result.violationsByCheck()).containsExactly(entry(TOKENS, 0), entry(SURVIVE, 1),
                entry(LOST_UPDATE, 1), entry(GRANTS, 0), entry(LEASE, 0));
        assertThat(result.violations()).allSatisfy(violation -> {
            assertThat(violation.process()).isEqualTo("final");
            assertThat(violation.description()).startsWith("no final read in the history");
        });
    }

    @Test
    void check_whenSetHistoryHasNoFinalRead_reportsOneViolationPerFinalStateCheck() {
        History history = new History().acquire("w1", 1).read("w1", 1, "").add("w1", 1, "w1-1", 1);

        CheckResult result = Checker.check(history.events(), Workload.SET);

        assertThat(result.violationsByCheck()).containsExactly(entry(TOKENS, 0), entry(SURVIVE, 1),
                entry(SET_COMPLETE, 1), entry(GRANTS, 0), entry(LEASE, 0));
        assertThat(result.violations()).extracting(Violation::description)
                .allMatch(description -> description.startsWith("no final read in the history"));
    }

    @Test
    void check_whenHistoryHas100000Events_finishesAndIsValid() {
        History history = new History();
        int cycles = 12_500;
        for (int cycle = 0; cycle < cycles; cycle++) {
            history.cycle("w" + (cycle % 4 + 1), cycle + 1, cycle, cycle + 1);
        }
        List<HistoryEvent> events = history.finalRead(Integer.toString(cycles)).events();
        assertThat(events).hasSizeGreaterThan(100_000);

        CheckResult result = Checker.check(events, Workload.COUNTER);

        assertThat(result.violations()).isEmpty();
        assertThat(result.counts()).containsEntry("grants", (long) cycles).containsEntry("writes_ok", (long) cycles);
    }

    @Test
    void check_whenCompletionHasNoPendingInvoke_throwsNamingTheEvent() {
        History history = new History().acquire("w1", 1).ok("w1", Op.READ, 1, "0", 0);

        assertThatThrownBy(() -> Checker.check(history.events(), Workload.COUNTER))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("no pending invoke of w1")
                .hasMessageContaining("{\"time_us\":300,\"process\":\"w1\",\"type\":\"ok\",\"op\":\"read\"");
    }

    @Test
    void check_whenOkWriteValueIsNotANumber_throwsNamingTheEvent() {
        History history = new History().acquire("w1", 1).read("w1", 1, "0").write("w1", 1, 1, 1);
        List<HistoryEvent> events = new ArrayList<>(history.events());
        events.set(events.size() - 1, events.get(events.size() - 1).withValue("one"));

        assertThatThrownBy(() -> Checker.check(events, Workload.COUNTER))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("non-numeric counter value 'one'")
                .hasMessageContaining("\"op\":\"write\"");
    }

    @Test
    void check_whenFinalReadIsNotANumber_throwsNamingTheEvent() {
        History history = new History().cycle("w1", 1, 0, 1).finalRead("w1-1");

        assertThatThrownBy(() -> Checker.check(history.events(), Workload.COUNTER))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("non-numeric counter value 'w1-1'")
                .hasMessageContaining("\"op\":\"final_read\"");
    }

    @Test
    void check_whenEventsAreOutOfTimeOrder_throwsNamingTheEvent() {
        List<HistoryEvent> events = new ArrayList<>(new History().acquire("w1", 1).events());
        events.add(HistoryEvent.of(50, "w2", Type.INVOKE, Op.ACQUIRE));

        assertThatThrownBy(() -> Checker.check(events, Workload.COUNTER))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("not sorted by time")
                .hasMessageContaining("\"process\":\"w2\"");
    }

    @Test
    void historyJson_realLookingHistory_roundTripsAndKeepsItsLineFormat(@TempDir Path directory) throws IOException {
        List<HistoryEvent> events = seedLostUpdateWithoutFencing().invoke("w2", Op.WRITE, 9, "7")
                .fail("w2", Op.WRITE, 9, "7", "stale token: presented 9, accepted 10 (scope \"counter\")\n")
                .sessionLost("w2").nemesis(Op.KILL, "lock-n1").events();

        List<HistoryEvent> parsed = events.stream().map(HistoryJson::format).map(HistoryJson::parse).toList();
        Path file = directory.resolve("history.jsonl");
        HistoryJson.write(file, events);

        assertThat(parsed).isEqualTo(events);
        assertThat(HistoryJson.read(file)).isEqualTo(events);
        String lines = events.stream().map(HistoryJson::format).collect(Collectors.joining("\n"));
        assertThat(lines).contains(
                "{\"time_us\":400,\"process\":\"w1\",\"type\":\"ok\",\"op\":\"read\",\"token\":2,\"value\":\"0\"}",
                "{\"time_us\":600,\"process\":\"w1\",\"type\":\"ok\",\"op\":\"write\",\"token\":2,\"value\":\"1\","
                        + "\"revision\":1}",
                "\"type\":\"fail\",\"op\":\"write\",\"token\":9,\"value\":\"7\",\"error\":\"stale token: presented 9,"
                        + " accepted 10 (scope \\\"counter\\\")\\n\"}",
                "\"process\":\"nemesis\",\"type\":\"info\",\"op\":\"pause\",\"target\":\"w1\"}",
                "\"process\":\"w2\",\"type\":\"info\",\"op\":\"session_lost\"}",
                "\"process\":\"final\",\"type\":\"ok\",\"op\":\"final_read\",\"value\":\"6\"}");
        assertThat(Checker.check(parsed, Workload.COUNTER).violationsByCheck()).containsEntry(TOKENS, 1);
    }

    @Test
    void check_whenGrantBeginsInsideAnotherWorkersBelievedHold_reportsLeaseBeliefViolation() {
        // w1's session (on a deposed leader) still promises its lease to 10 ms when w2 is granted at 0.7 ms
        History history = new History().acquire("w1", 1).lease("w1", 1, 10_000).read("w1", 1, "0");
        long w1GrantMicros = 200;
        history.acquire("w2", 2).lease("w2", 2, 20_000).read("w2", 2, "0").write("w2", 2, 1, 1)
                .release("w2", 2).invoke("w1", Op.WRITE, 1, "1")
                .fail("w1", Op.WRITE, 1, "1", "stale token: presented 1, accepted 2").release("w1", 1)
                .finalRead("1");

        CheckResult result = Checker.check(history.events(), Workload.COUNTER);

        assertThat(result.violationsByCheck()).containsEntry(LEASE, 1);
        Violation violation = of(result, LEASE).get(0);
        assertThat(violation.process()).isEqualTo("w1");
        assertThat(violation.token()).isEqualTo(1);
        assertThat(violation.description()).isEqualTo("w1 believed it held token 1 from "
                + Checker.seconds(w1GrantMicros) + " to " + Checker.seconds(1_700)
                + " (its release), but w2 was granted token 2 at " + Checker.seconds(700) + " (held to "
                + Checker.seconds(1_300) + ")");
        assertThat(of(result, TOKENS)).isEmpty();
    }

    @Test
    void check_whenLocalLeaseEndedBeforeTheNextGrant_findsNoLeaseBeliefViolation() {
        // w1 is paused past its lease: it still holds the grant in the history, but believed it only to 500 us
        History history = new History().acquire("w1", 1).lease("w1", 1, 500).read("w1", 1, "0")
                .nemesis(Op.PAUSE, "w1");
        history.acquire("w2", 2).lease("w2", 2, 5_000).read("w2", 2, "0").write("w2", 2, 1, 1).release("w2", 2)
                .nemesis(Op.RESUME, "w1").invoke("w1", Op.WRITE, 1, "1")
                .fail("w1", Op.WRITE, 1, "1", "stale token: presented 1, accepted 2").release("w1", 1)
                .finalRead("1");

        CheckResult result = Checker.check(history.events(), Workload.COUNTER);

        assertThat(result.violations()).isEmpty();
        assertThat(LeaseBeliefCheck.holds(history.events())).extracting(LeaseBeliefCheck.Hold::ending)
                .containsExactly("its local lease end", "its release");
    }

    @Test
    void check_whenBeliefEndsByKillOrLostSession_findsNoLeaseBeliefViolation() {
        History history = new History().acquire("w1", 1).lease("w1", 1, 1_000_000).nemesis(Op.KILL, "w1")
                .acquire("w2", 2).lease("w2", 2, 1_000_000)
                .line("w2", Type.INFO, Op.LEASE_LOST, 0, "", 0, "", "") // an earlier session's: the hold goes on
                .line("w2", Type.INFO, Op.LEASE_LOST, 2, "", 0, "", "")
                .acquire("w3", 3).lease("w3", 3, 1_000_000).release("w3", 3).finalRead("0");

        CheckResult result = Checker.check(history.events(), Workload.COUNTER);

        assertThat(of(result, LEASE)).isEmpty();
        assertThat(LeaseBeliefCheck.holds(history.events())).extracting(LeaseBeliefCheck.Hold::ending)
                .containsExactly("its kill", "learning its session was lost", "its release");
    }

    @Test
    void check_whenLeaseEventCarriesAnotherToken_ignoresIt() {
        // a late look of the watcher at the previous grant must not extend the current one
        History history = new History().acquire("w1", 1).lease("w1", 1, 300).lease("w1", 9, 1_000_000)
                .acquire("w2", 2).release("w2", 2).release("w1", 1).finalRead("0");

        assertThat(of(Checker.check(history.events(), Workload.COUNTER), LEASE)).isEmpty();
    }

    /**
     * Regression: grants queued for sessions whose local leases had ended were answered late, inside the next
     * holder's belief; a worker that never believed it held a grant conflicts with no one.
     */
    @Test
    void check_whenGrantAnswerArrivesAfterItsOwnLeaseEnded_findsNoLeaseBeliefViolation() {
        History history = new History().acquire("w2", 14).lease("w2", 14, 5_000).acquire("w1", 12)
                .read("w2", 14, "0").release("w2", 14).finalRead("0");

        assertThat(LeaseBeliefCheck.holds(history.events())).extracting(LeaseBeliefCheck.Hold::process,
                hold -> hold.endMicros() - hold.startMicros()).contains(org.assertj.core.groups.Tuple.tuple("w1", 0L));
        assertThat(of(Checker.check(history.events(), Workload.COUNTER), LEASE)).isEmpty();
    }
}
