package io.fencer.chaos.fault;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.chaos.fault.MembershipPlan.Change;
import io.fencer.chaos.fault.MembershipPlan.Step;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The membership plan without processes: one change at a time, the voter count kept, refused changes retried. */
class MembershipPlanTest {
    private static final List<String> FOUNDERS = List.of("n1", "n2", "n3");

    @Test
    void next_fromThreeVoters_addsPromotesThenRemovesBackToThree() {
        MembershipPlan plan = new MembershipPlan(1, FOUNDERS);

        Change add = plan.next("n1");
        assertThat(add).isEqualTo(new Change(Step.ADD, "n4", false));
        plan.completed(add);
        assertThat(plan.learner()).isEqualTo("n4");
        assertThat(plan.voters()).containsExactly("n1", "n2", "n3");

        Change promote = plan.next("n1");
        assertThat(promote).isEqualTo(new Change(Step.PROMOTE, "n4", false));
        plan.completed(promote);
        assertThat(plan.voters()).containsExactly("n1", "n2", "n3", "n4");
        assertThat(plan.learner()).isNull();

        Change remove = plan.next("n1");
        assertThat(remove.step()).isEqualTo(Step.REMOVE);
        assertThat(remove.peer()).isEqualTo(remove.leader() ? "n1" : "n2"); // the leader, or the oldest follower
        plan.completed(remove);
        assertThat(plan.voters()).hasSize(3).doesNotContain(remove.peer()).contains("n4");
        assertThat(plan.completedCount()).isEqualTo(3);
        assertThat(plan.next("n3")).isEqualTo(new Change(Step.ADD, "n5", false));
    }

    @Test
    void next_whileAChangeIsUnfinished_isRefused() {
        MembershipPlan plan = new MembershipPlan(1, FOUNDERS);
        Change add = plan.next("n1");

        assertThatThrownBy(() -> plan.next("n1")).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("add n4").hasMessageContaining("one change at a time");
        assertThatThrownBy(() -> plan.completed(new Change(Step.ADD, "n9", false)))
                .isInstanceOf(IllegalStateException.class);
        plan.completed(add);
        assertThat(plan.next("n1").step()).isEqualTo(Step.PROMOTE);
    }

    @Test
    void refused_change_isOfferedAgainAndNotCounted() {
        MembershipPlan plan = new MembershipPlan(1, FOUNDERS);
        Change add = plan.next("n1");
        plan.refused(add);
        assertThat(plan.next("n2")).as("the same add, the same spare").isEqualTo(add);
        plan.completed(add);
        Change promote = plan.next("n2");
        plan.refused(promote);
        assertThat(plan.next("n2")).isEqualTo(promote);
        plan.completed(promote);

        Change remove = plan.next("n2");
        plan.refused(remove);
        Change again = plan.next("n3"); // the leader moved: a remove of the leader follows it, of a follower stays
        assertThat(again.step()).isEqualTo(Step.REMOVE);
        assertThat(again.leader()).isEqualTo(remove.leader());
        assertThat(again.peer()).isEqualTo(remove.leader() ? "n3" : "n1");
        plan.completed(again);

        assertThat(plan.completedCount()).isEqualTo(3);
        assertThat(plan.refusedCount()).isEqualTo(3);
        assertThat(plan.voters()).hasSize(3);
    }

    @Test
    void spareLost_addTakesTheNextSpare() {
        MembershipPlan plan = new MembershipPlan(1, FOUNDERS);
        Change add = plan.next("n1");
        plan.spareLost(add);

        assertThat(plan.next("n1")).isEqualTo(new Change(Step.ADD, "n5", false));
        assertThat(plan.completedCount()).isZero();
        assertThat(plan.refusedCount()).isOne();
    }

    /**
     * Random outcomes and leaders over many changes: never two changes at once, the voters always the target or one
     * more, at most one learner, no peer removed twice or added twice, and both kinds of remove drawn.
     */
    @Test
    void next_underRandomRefusals_keepsVotersAtTargetOrOneMore() {
        for (int founders : List.of(3, 5)) {
            List<String> group = new ArrayList<>();
            for (int i = 1; i <= founders; i++) {
                group.add("n" + i);
            }
            MembershipPlan plan = new MembershipPlan(7, group);
            SplittableRandom random = new SplittableRandom(founders);
            Set<String> added = new HashSet<>();
            Set<String> removed = new HashSet<>();
            Set<Boolean> removedLeader = new HashSet<>();
            int refusals = 0;
            for (int i = 0; i < 500; i++) {
                List<String> voters = plan.voters();
                String leader = random.nextInt(10) == 0 ? null : voters.get(random.nextInt(voters.size()));
                Change change = plan.next(leader);
                if (random.nextInt(4) == 0) {
                    plan.refused(change);
                    refusals++;
                } else {
                    plan.completed(change);
                    if (change.step() == Step.ADD) {
                        assertThat(added.add(change.peer())).as("added once: %s", change).isTrue();
                    }
                    if (change.step() == Step.REMOVE) {
                        assertThat(removed.add(change.peer())).as("removed once: %s", change).isTrue();
                        assertThat(change.leader()).isEqualTo(change.peer().equals(leader));
                        removedLeader.add(change.leader());
                    }
                }
                assertThat(plan.voters().size()).as("after %s", change).isBetween(founders, founders + 1);
                assertThat(plan.learner() == null || plan.voters().size() == founders)
                        .as("a learner only while the voters are the target").isTrue();
            }
            assertThat(plan.completedCount() + plan.refusedCount()).isEqualTo(500);
            assertThat(plan.refusedCount()).isEqualTo(refusals);
            assertThat(removedLeader).containsExactlyInAnyOrder(true, false);
        }
    }

    @Test
    void plan_ofFewerThanThreeVoters_isRefused() {
        assertThatThrownBy(() -> new MembershipPlan(1, List.of("n1"))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("at least 3 voters");
        assertThatThrownBy(() -> FaultSchedule.plan(1, EnumSet.of(Fault.Kind.MEMBERSHIP),
                EnumSet.allOf(Fault.Partition.class), 3, 1, Duration.ofSeconds(30), Duration.ofSeconds(2),
                Duration.ofSeconds(3))).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("membership fault needs at least 3 lock peers, not 1");
    }

    @Test
    void sparesMax_coversEveryFaultAndTheOneStartedAhead() {
        assertThat(MembershipPlan.sparesMax(0)).isEqualTo(2);
        assertThat(MembershipPlan.sparesMax(4)).isEqualTo(6);
        assertThat(MembershipPlan.sparesMax(1_000)).isEqualTo(MembershipPlan.SPARES_MAX);
    }
}
