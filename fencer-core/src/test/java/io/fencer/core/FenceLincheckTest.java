package io.fencer.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import org.jetbrains.kotlinx.lincheck.LinCheckerKt;
import org.jetbrains.kotlinx.lincheck.annotations.Operation;
import org.jetbrains.kotlinx.lincheck.annotations.Param;
import org.jetbrains.kotlinx.lincheck.paramgen.LongGen;
import org.jetbrains.kotlinx.lincheck.strategy.IncorrectResultsFailure;
import org.jetbrains.kotlinx.lincheck.strategy.LincheckFailure;
import org.jetbrains.kotlinx.lincheck.strategy.managed.modelchecking.ModelCheckingOptions;
import org.jetbrains.kotlinx.lincheck.strategy.stress.StressOptions;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * Lincheck's check that {@link Fence} is linearizable: every concurrent history of writes, fenced reads and reads of
 * the accepted token must match some sequential order. A write answers with its position in the resource's log, so
 * a stale write that slipped in between a check and its mutation shows up as an order no sequential run allows.
 * Every write also passes the fence's re-entry guard: a thread wrongly taken for the holder would throw, which no
 * sequential run does.
 */
@Param(name = "token", gen = LongGen.class, conf = "1:4")
public class FenceLincheckTest { // public: Lincheck creates instances itself
    /** {@code -Dfencer.soak=true}: the longer runs (docs/testing.md). */
    private static final boolean SOAK = Boolean.getBoolean("fencer.soak");
    private final Fence fence = Fence.create("orders", FencePolicy.AT_LEAST);
    private final List<Long> log = new ArrayList<>(); // the resource: changed only inside the fence

    @Operation
    public String write(@Param(name = "token") long token) {
        try {
            return "applied at " + fence.call(new FencingToken("orders", token), () -> {
                log.add(token);
                return log.size();
            });
        } catch (StaleTokenException e) {
            return "stale, accepted " + e.accepted();
        }
    }

    @Operation
    public String check(@Param(name = "token") long token) {
        try {
            fence.check(new FencingToken("orders", token));
            return "admitted";
        } catch (StaleTokenException e) {
            return "stale, accepted " + e.accepted();
        }
    }

    @Operation
    public long accepted() {
        return fence.accepted();
    }

    @Test
    void modelChecking_interleavingsOfWritesChecksAndReads_areLinearizable() {
        LinCheckerKt.check(modelChecking(), FenceLincheckTest.class);
    }

    @Test
    @Tag("soak") // the long tier (docs/testing.md): the model checker above explores the interleavings themselves
    void stress_writesChecksAndReadsOnRealThreads_areLinearizable() {
        StressOptions options = new StressOptions().iterations(SOAK ? 20 : 5).invocationsPerIteration(2_000)
                .threads(2).actorsPerThread(3);
        LinCheckerKt.check(options, FenceLincheckTest.class);
    }

    @Test
    void control_checkThenActInTwoCriticalSections_isFoundNotLinearizable() {
        // The same operations on a guard that checks and applies under the lock taken twice: the model checker must
        // find the stale write that lands between the two, or a passing run above proves nothing.
        LincheckFailure failure = LinCheckerKt.checkImpl(modelChecking(), CheckThenActGuard.class);
        assertThat(failure).isInstanceOf(IncorrectResultsFailure.class);
    }

    private static ModelCheckingOptions modelChecking() {
        // Two threads of three operations: the scenarios where a stale write could slip in need only two writers, and
        // Lincheck's threads spin while they wait, so more threads than cores makes each run crawl. Ten scenarios
        // (there were 20, 36 s of CI) of 500 interleavings each: with tokens 1 to 4 on both threads nearly every
        // scenario has the two writers a stale write needs, and the control finds it in its first scenarios. The
        // default suite runs three of 300 (the control still finds its stale write; -Dfencer.soak=true runs ten).
        return new ModelCheckingOptions().iterations(SOAK ? 10 : 3).invocationsPerIteration(SOAK ? 500 : 300)
                .threads(2).actorsPerThread(3);
    }

    /** A guard that is broken on purpose: the check and the write hold the lock separately. */
    @Param(name = "token", gen = LongGen.class, conf = "1:4")
    public static class CheckThenActGuard {
        private final List<Long> log = new ArrayList<>();
        private long accepted;

        @Operation
        public String write(@Param(name = "token") long token) {
            long seen;
            synchronized (this) {
                seen = accepted;
            }
            if (token < seen) {
                return "stale, accepted " + seen;
            }
            synchronized (this) {
                log.add(token);
                accepted = token;
                return "applied at " + log.size();
            }
        }

        @Operation
        public synchronized long accepted() {
            return accepted;
        }
    }
}
