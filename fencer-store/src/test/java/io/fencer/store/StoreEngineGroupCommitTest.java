package io.fencer.store;

import static io.fencer.store.StoreTesting.bytes;
import static io.fencer.store.StoreTesting.put;
import static io.fencer.store.StoreTesting.sequencer;
import static io.fencer.store.StoreTesting.text;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.fencer.core.FencePolicy;
import io.fencer.core.IdempotencyMismatchException;
import io.fencer.core.LimitExceededException;
import io.fencer.core.StaleTokenException;
import io.fencer.core.UnavailableException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.TimeoutException;
import java.util.function.IntConsumer;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Batch commit: concurrent writes are admitted one after another in arrival order, per scope, and share one synced
 * batch across scopes. Deterministic batches are made by holding the committer in the first group's listener
 * until the next writes are queued behind it; they then form the next batch, in the order they were queued.
 */
class StoreEngineGroupCommitTest {
    private static final long WAIT_SECONDS = 60;
    private static final int THREADS = 32;
    private static final int WRITES_PER_THREAD = 40;

    @TempDir
    Path dir;
    private StoreEngine store;
    private final ExecutorService pool = Executors.newCachedThreadPool();
    /** The size of every group taken, in order; appended inside the scope's guard. */
    private final List<Integer> groups = Collections.synchronizedList(new ArrayList<>());
    private final CountDownLatch firstGroupHeld = new CountDownLatch(1);
    private final CountDownLatch releaseFirstGroup = new CountDownLatch(1);
    /** The first store's synced writes, which a test may make RocksDB refuse. */
    private final RefusingSyncedWrites syncedWrites = new RefusingSyncedWrites();

    /** One acknowledged write with when it was issued and answered (System.nanoTime). */
    private record Acknowledged(long token, WriteResult result, long startNanos, long endNanos) {}

    @BeforeEach
    void open() {
        store = StoreEngine.open(dir, StoreOptions.defaults(), syncedWrites);
    }

    @AfterEach
    void close() {
        releaseFirstGroup.countDown();
        pool.shutdownNow();
        store.close();
    }

    @Test
    void write_manyThreadsInterleavedTokensOneScope_acknowledgedWritesAreDurableOrderedAndDense() throws Exception {
        List<Acknowledged> acknowledged = writeFromManyThreads("orders");

        List<Long> revisions = acknowledged.stream().map(a -> a.result().revision()).sorted().toList();
        List<Long> dense = new ArrayList<>();
        for (long revision = 1; revision <= acknowledged.size(); revision++) {
            dense.add(revision);
        }
        assertThat(revisions).as("revisions of acknowledged writes are distinct and dense").isEqualTo(dense);
        assertReplayableInRevisionOrder(acknowledged);
        assertNoneBelowEarlierAcknowledged(acknowledged);
        long highest = acknowledged.stream().mapToLong(Acknowledged::token).max().orElseThrow();
        store.close();
        store = StoreEngine.open(dir, StoreOptions.defaults());
        for (Acknowledged write : acknowledged) {
            ReadResult read = store.get("orders", bytes("t" + write.token()), null);
            assertThat(read.present()).as("acknowledged orders#%d after reopen", write.token()).isTrue();
            assertThat(read.writtenBy()).isEqualTo(write.token());
        }
        Set<Long> acknowledgedTokens = acknowledged.stream().map(Acknowledged::token).collect(Collectors.toSet());
        for (long token = 1; token <= (long) THREADS * WRITES_PER_THREAD; token++) {
            if (!acknowledgedTokens.contains(token)) {
                assertThat(store.get("orders", bytes("t" + token), null).present())
                        .as("refused orders#%d after reopen", token).isFalse();
            }
        }
        assertThat(store.accepted("orders")).isEqualTo(highest);
        assertThat(store.scope("orders").revision()).isEqualTo(acknowledged.size());
    }

    @Test
    void write_whenStaleWriteInSameGroup_refusesOnlyIt() throws Exception {
        store.write("orders", sequencer("orders", 5), put("k", "from 5"), null);
        holdFirstGroup();
        Future<WriteResult> holder = writeAsync("orders", 6, "k", "from 6", null);
        awaitHeld();

        Future<WriteResult> higher = queue("orders", 8, "k", "from 8", null);
        Future<WriteResult> stale = queue("orders", 7, "k", "from 7", null);
        Future<WriteResult> sameAsHigher = queue("orders", 8, "other", "from 8 again", null);
        releaseFirstGroup.countDown();

        assertThat(holder.get(WAIT_SECONDS, TimeUnit.SECONDS).revision()).isEqualTo(2);
        assertThat(higher.get(WAIT_SECONDS, TimeUnit.SECONDS)).isEqualTo(
                new WriteResult("orders", 8, 8, 3, 1, false));
        assertThatThrownBy(() -> stale.get(WAIT_SECONDS, TimeUnit.SECONDS)).hasCauseInstanceOf(
                StaleTokenException.class).cause().satisfies(e -> {
                    assertThat(((StaleTokenException) e).presented()).isEqualTo(7);
                    assertThat(((StaleTokenException) e).accepted()).isEqualTo(8);
                });
        assertThat(sameAsHigher.get(WAIT_SECONDS, TimeUnit.SECONDS)).isEqualTo(
                new WriteResult("orders", 8, 8, 4, 1, false));
        assertThat(groups).as("the three queued writes were one group").containsExactly(1, 3);
        assertThat(text(store.get("orders", bytes("k"), null).value())).isEqualTo("from 8");
        assertThat(store.scope("orders").revision()).isEqualTo(4);
    }

    @Test
    void write_whenStrictScopeGetsSameTokenTwiceInOneGroup_refusesTheSecond() throws Exception {
        store.createScope("ledger", "ledger", FencePolicy.STRICT);
        holdFirstGroup();
        Future<WriteResult> holder = writeAsync("ledger", 1, "k", "from 1", null);
        awaitHeld();

        Future<WriteResult> first = queue("ledger", 3, "k", "from 3", null);
        Future<WriteResult> second = queue("ledger", 3, "k", "from 3 again", null);
        Future<WriteResult> next = queue("ledger", 4, "j", "from 4", null);
        releaseFirstGroup.countDown();

        holder.get(WAIT_SECONDS, TimeUnit.SECONDS);
        assertThat(first.get(WAIT_SECONDS, TimeUnit.SECONDS).revision()).isEqualTo(2);
        assertThatThrownBy(() -> second.get(WAIT_SECONDS, TimeUnit.SECONDS))
                .hasCauseInstanceOf(StaleTokenException.class).hasMessageContaining("STRICT");
        assertThat(next.get(WAIT_SECONDS, TimeUnit.SECONDS).revision()).isEqualTo(3);
        assertThat(groups).containsExactly(1, 3);
        assertThat(text(store.get("ledger", bytes("k"), null).value())).isEqualTo("from 3");
    }

    @Test
    void write_whenRetryInSameGroupAsFirstAttempt_appliesOnce() throws Exception {
        holdFirstGroup();
        Future<WriteResult> holder = writeAsync("orders", 5, "k", "from 5", null);
        awaitHeld();

        Future<WriteResult> attempt = queue("orders", 6, "k", "first attempt", "req-1");
        Future<WriteResult> retry = queue("orders", 6, "k", "first attempt", "req-1");
        releaseFirstGroup.countDown();

        holder.get(WAIT_SECONDS, TimeUnit.SECONDS);
        WriteResult first = attempt.get(WAIT_SECONDS, TimeUnit.SECONDS);
        assertThat(first).isEqualTo(new WriteResult("orders", 6, 6, 2, 1, false));
        assertThat(retry.get(WAIT_SECONDS, TimeUnit.SECONDS)).isEqualTo(first.asReplay());
        assertThat(groups).containsExactly(1, 2);
        assertThat(store.scope("orders").revision()).as("applied once").isEqualTo(2);
        assertThat(text(store.get("orders", bytes("k"), null).value())).isEqualTo("first attempt");
        store.close();
        store = StoreEngine.open(dir, StoreOptions.defaults());
        assertThat(store.write("orders", sequencer("orders", 6), put("k", "first attempt"), "req-1"))
                .isEqualTo(first.asReplay());
    }

    @Test
    void write_whenOtherOpsUnderTheSameKeyInSameGroup_refusesOnlyThemAndReplaysTheTrueRetry() throws Exception {
        holdFirstGroup();
        Future<WriteResult> holder = writeAsync("orders", 5, "k", "from 5", null);
        awaitHeld();

        Future<WriteResult> attempt = queue("orders", 6, "k", "first attempt", "req-1");
        Future<WriteResult> otherOps = queue("orders", 6, "k", "other ops", "req-1");
        Future<WriteResult> retry = queue("orders", 6, "k", "first attempt", "req-1");
        releaseFirstGroup.countDown();

        holder.get(WAIT_SECONDS, TimeUnit.SECONDS);
        WriteResult first = attempt.get(WAIT_SECONDS, TimeUnit.SECONDS);
        assertThatThrownBy(() -> otherOps.get(WAIT_SECONDS, TimeUnit.SECONDS))
                .cause().isInstanceOfSatisfying(IdempotencyMismatchException.class, e -> {
                    assertThat(e.scope()).isEqualTo("orders");
                    assertThat(e.idempotencyKey()).isEqualTo("req-1");
                    assertThat(e.token()).isEqualTo(6);
                });
        assertThat(retry.get(WAIT_SECONDS, TimeUnit.SECONDS)).isEqualTo(first.asReplay());
        assertThat(groups).containsExactly(1, 3);
        assertThat(store.scope("orders").revision()).as("only the first attempt applied").isEqualTo(2);
        assertThat(text(store.get("orders", bytes("k"), null).value())).isEqualTo("first attempt");
    }

    @Test
    void write_whenHigherTokenInGroupPreemptsUnit_unitEndsAndItsTokenIsStaleAfterIt() throws Exception {
        store.write("orders", sequencer("orders", 5), put("k", "from 5"), null);
        Unit unit = store.begin("orders", sequencer("orders", 6), Duration.ofSeconds(60));
        unit.put(bytes("k"), bytes("from the unit"));
        holdFirstGroup();
        Future<WriteResult> busy = writeAsync("orders", 6, "k", "busy", null);
        awaitHeld();

        Future<WriteResult> preempting = queue("orders", 7, "k", "from 7", null);
        Future<WriteResult> unitToken = queue("orders", 6, "k", "from 6", null);
        releaseFirstGroup.countDown();

        assertThatThrownBy(() -> busy.get(WAIT_SECONDS, TimeUnit.SECONDS))
                .hasCauseInstanceOf(LimitExceededException.class).hasMessageContaining(unit.id());
        assertThat(preempting.get(WAIT_SECONDS, TimeUnit.SECONDS).accepted()).isEqualTo(7);
        assertThatThrownBy(() -> unitToken.get(WAIT_SECONDS, TimeUnit.SECONDS))
                .hasCauseInstanceOf(StaleTokenException.class).hasMessageContaining("orders#7");
        assertThat(unit.state()).isEqualTo(Unit.State.PREEMPTED);
        assertThatThrownBy(unit::commit).isInstanceOf(StaleTokenException.class);
        assertThat(text(store.get("orders", bytes("k"), null).value())).isEqualTo("from 7");
    }

    @Test
    void write_whenGroupBatchFails_failsEveryWriteOfTheGroupWithoutAdvancingAccepted() throws Exception {
        store.write("orders", sequencer("orders", 5), put("k", "from 5"), null);
        List<Long> applied = Collections.synchronizedList(new ArrayList<>());
        store.applyListener((scope, token, acceptedBefore) -> applied.add(token));
        holdFirstGroup(group -> syncedWrites.refuse(group == 2));
        Future<WriteResult> holder = writeAsync("orders", 6, "k", "from 6", null);
        awaitHeld();

        List<Future<WriteResult>> failing = List.of(queue("orders", 7, "a", "from 7", "req-7"),
                queue("orders", 8, "b", "from 8", null), queue("orders", 5, "c", "stale", null));
        releaseFirstGroup.countDown();

        assertThat(holder.get(WAIT_SECONDS, TimeUnit.SECONDS).revision()).isEqualTo(2);
        for (Future<WriteResult> write : failing) {
            assertThatThrownBy(() -> write.get(WAIT_SECONDS, TimeUnit.SECONDS))
                    .hasCauseInstanceOf(UnavailableException.class)
                    .hasMessageContaining("failed with its group of 3 and may or may not have been applied")
                    .hasMessageContaining("disableWAL option is not supported"); // RocksDB's own refusal
        }
        assertThat(groups).containsExactly(1, 3);
        assertThat(applied).as("only the held group was applied").containsExactly(6L);
        assertThat(store.accepted("orders")).isEqualTo(6);
        assertThat(store.scope("orders").revision()).isEqualTo(2);
        assertThat(store.write("orders", sequencer("orders", 6), put("c", "from 6"), null).revision())
                .as("neither the fence nor the revision moved in memory").isEqualTo(3);
        assertThat(store.write("orders", sequencer("orders", 7), put("a", "again"), "req-7").replayed())
                .as("no idempotency record of the failed write").isFalse();
        store.close();
        store = StoreEngine.open(dir, StoreOptions.defaults());
        assertThat(store.get("orders", bytes("b"), null).present()).isFalse();
        assertThat(store.accepted("orders")).isEqualTo(7);
        assertThat(store.scope("orders").revision()).isEqualTo(4);
    }

    @Test
    void write_whenPlaceholderDiscardedUnderQueuedWrites_theyQueueOnTheNewScopeAndApply() throws Exception {
        holdFirstGroup(group -> syncedWrites.refuse(group == 1));
        Future<WriteResult> creator = writeAsync("fresh", 1, "k", "from 1", null);
        awaitHeld();
        // one token: the two queue again on the new scope in whichever order their threads wake
        Future<WriteResult> second = queue("fresh", 2, "a", "from 2", null);
        Future<WriteResult> third = queue("fresh", 2, "b", "from 2 too", null);
        releaseFirstGroup.countDown();

        assertThatThrownBy(() -> creator.get(WAIT_SECONDS, TimeUnit.SECONDS))
                .hasCauseInstanceOf(UnavailableException.class);
        List<Long> revisions = List.of(second.get(WAIT_SECONDS, TimeUnit.SECONDS).revision(),
                third.get(WAIT_SECONDS, TimeUnit.SECONDS).revision());
        assertThat(revisions).containsExactlyInAnyOrder(1L, 2L);
        assertThat(store.accepted("fresh")).isEqualTo(2);
        assertThat(store.get("fresh", bytes("k"), null).present()).isFalse();
        assertThat(store.pendingWrites("fresh")).isZero();
    }

    @Test
    void writeAsync_whenWritesToSeveralScopesQueueBehindABatch_commitsThemInOneSyncedWrite() throws Exception {
        holdFirstGroup();
        Future<WriteResult> holder = writeAsync("a", 1, "k", "from a1", null);
        awaitHeld();
        long batchesBefore = store.batchesWritten();

        CompletableFuture<WriteResult> b1 = store.writeAsync("b", sequencer("b", 1), put("k", "from b1"), null);
        CompletableFuture<WriteResult> c1 = store.writeAsync("c", sequencer("c", 1), put("k", "from c1"), null);
        CompletableFuture<WriteResult> b2 = store.writeAsync("b", sequencer("b", 2), put("k", "from b2"), null);
        CompletableFuture<WriteResult> a2 = store.writeAsync("a", sequencer("a", 2), put("k", "from a2"), null);
        assertThat(List.of(b1, c1, b2, a2)).as("queued behind the held batch").noneMatch(Future::isDone);
        releaseFirstGroup.countDown();

        assertThat(holder.get(WAIT_SECONDS, TimeUnit.SECONDS).revision()).isEqualTo(1);
        assertThat(b1.get(WAIT_SECONDS, TimeUnit.SECONDS)).isEqualTo(new WriteResult("b", 1, 1, 1, 1, false));
        assertThat(b2.get(WAIT_SECONDS, TimeUnit.SECONDS)).isEqualTo(new WriteResult("b", 2, 2, 2, 1, false));
        assertThat(c1.get(WAIT_SECONDS, TimeUnit.SECONDS)).isEqualTo(new WriteResult("c", 1, 1, 1, 1, false));
        assertThat(a2.get(WAIT_SECONDS, TimeUnit.SECONDS)).isEqualTo(new WriteResult("a", 2, 2, 2, 1, false));
        assertThat(groups).as("one group per scope, in order of each scope's first write")
                .containsExactly(1, 2, 1, 1);
        assertThat(store.batchesWritten() - batchesBefore).as("the held batch, then one for all four writes")
                .isEqualTo(2);
        store.close();
        store = StoreEngine.open(dir, StoreOptions.defaults());
        assertThat(text(store.get("b", bytes("k"), null).value())).isEqualTo("from b2");
        assertThat(text(store.get("c", bytes("k"), null).value())).isEqualTo("from c1");
        assertThat(store.accepted("a")).isEqualTo(2);
    }

    @Test
    void writeAsync_whenBatchFails_failsTheScopesItHeldAndKeepsRefusalsOfTheOthers() throws Exception {
        store.write("b", sequencer("b", 5), put("k", "from 5"), null);
        store.write("c", sequencer("c", 5), put("k", "from 5"), null);
        holdFirstGroup(group -> syncedWrites.refuse(group == 2 || group == 3));
        Future<WriteResult> holder = writeAsync("a", 1, "k", "from a1", null);
        awaitHeld();

        CompletableFuture<WriteResult> applied = store.writeAsync("b", sequencer("b", 6), put("k", "6"), null);
        CompletableFuture<WriteResult> staleInB = store.writeAsync("b", sequencer("b", 4), put("k", "4"), null);
        CompletableFuture<WriteResult> staleInC = store.writeAsync("c", sequencer("c", 4), put("k", "4"), null);
        releaseFirstGroup.countDown();

        holder.get(WAIT_SECONDS, TimeUnit.SECONDS);
        for (CompletableFuture<WriteResult> write : List.of(applied, staleInB)) {
            assertThatThrownBy(() -> write.get(WAIT_SECONDS, TimeUnit.SECONDS))
                    .hasCauseInstanceOf(UnavailableException.class)
                    .hasMessageContaining("scope 'b'").hasMessageContaining("failed with its group of 2");
        }
        assertThatThrownBy(() -> staleInC.get(WAIT_SECONDS, TimeUnit.SECONDS))
                .as("scope c had nothing in the failed write: its refusal stands")
                .hasCauseInstanceOf(StaleTokenException.class);
        syncedWrites.refuse(false);
        assertThat(store.accepted("b")).isEqualTo(5);
        assertThat(store.scope("b").revision()).isEqualTo(1);
        assertThat(store.write("b", sequencer("b", 6), put("k", "6 again"), null).revision()).isEqualTo(2);
    }

    @Test
    void close_withWritesQueued_commitsThemFirstAndRefusesLaterWrites() throws Exception {
        holdFirstGroup();
        Future<WriteResult> holder = writeAsync("a", 1, "k", "from a1", null);
        awaitHeld();
        CompletableFuture<WriteResult> queued = store.writeAsync("b", sequencer("b", 1), put("k", "queued"), null);
        StoreEngine closing = store;
        CompletableFuture<Void> closed = CompletableFuture.runAsync(closing::close, pool);
        await().atMost(Duration.ofSeconds(WAIT_SECONDS)).until(() -> {
            try {
                closing.writeAsync("c", sequencer("c", 1), put("k", "late"), null);
                return false;
            } catch (UnavailableException refused) {
                return true; // the committer is stopping: nothing more is taken
            }
        });
        releaseFirstGroup.countDown();

        closed.get(WAIT_SECONDS, TimeUnit.SECONDS);
        assertThat(holder.get(WAIT_SECONDS, TimeUnit.SECONDS).revision()).isEqualTo(1);
        assertThat(queued.get(WAIT_SECONDS, TimeUnit.SECONDS).revision()).isEqualTo(1);
        assertThatThrownBy(() -> closing.write("b", sequencer("b", 2), put("k", "after"), null))
                .isInstanceOf(UnavailableException.class).hasMessageContaining("clos");
        store = StoreEngine.open(dir, StoreOptions.defaults());
        assertThat(text(store.get("b", bytes("k"), null).value())).isEqualTo("queued");
        assertThat(store.get("c", bytes("k"), null).present()).isFalse();
    }

    @Test
    void writeAsync_whenQueueHoldsWritesQueuedMax_refusesTheNextWithLimitExceeded() throws Exception {
        holdFirstGroup();
        Future<WriteResult> holder = writeAsync("a", 1, "k", "from a1", null);
        awaitHeld();
        List<CompletableFuture<WriteResult>> queued = new ArrayList<>();
        for (int i = 0; i < StoreEngine.WRITES_QUEUED_MAX; i++) {
            queued.add(store.writeAsync("b", sequencer("b", 1), put("k" + i, "v"), null));
        }

        assertThatThrownBy(() -> store.writeAsync("b", sequencer("b", 1), put("over", "v"), null))
                .isInstanceOf(LimitExceededException.class).hasMessageContaining("writesQueuedMax")
                .hasMessageContaining(Integer.toString(StoreEngine.WRITES_QUEUED_MAX));
        releaseFirstGroup.countDown();
        holder.get(WAIT_SECONDS, TimeUnit.SECONDS);
        CompletableFuture.allOf(queued.toArray(CompletableFuture[]::new)).get(WAIT_SECONDS, TimeUnit.SECONDS);
        assertThat(store.scope("b").revision()).isEqualTo(StoreEngine.WRITES_QUEUED_MAX);
        assertThat(store.get("b", bytes("over"), null).present()).isFalse();
        assertThat(store.write("b", sequencer("b", 1), put("over", "v"), null).revision())
                .as("accepted again once the queue drained").isEqualTo(StoreEngine.WRITES_QUEUED_MAX + 1);
    }

    // ---- helpers ----

    /** Holds the guard of the first group taken until the test releases it; records every group's size. */
    private void holdFirstGroup() {
        holdFirstGroup(group -> { });
    }

    /** As {@link #holdFirstGroup()}, then runs {@code beforeAdmission} with each group's number (from 1). */
    private void holdFirstGroup(IntConsumer beforeAdmission) {
        store.groupListener((scope, writes) -> {
            groups.add(writes);
            int group = groups.size();
            if (group == 1) {
                firstGroupHeld.countDown();
                awaitLatch(releaseFirstGroup);
            }
            beforeAdmission.accept(group);
        });
    }

    private void awaitHeld() {
        awaitLatch(firstGroupHeld);
    }

    /** Starts a write and returns once it is queued behind the held group, so queued writes keep their order. */
    private Future<WriteResult> queue(String scope, long token, String key, String value, String idempotencyKey) {
        int queued = store.pendingWrites(scope);
        Future<WriteResult> write = writeAsync(scope, token, key, value, idempotencyKey);
        await().atMost(Duration.ofSeconds(WAIT_SECONDS)).until(() -> store.pendingWrites(scope) == queued + 1);
        return write;
    }

    private Future<WriteResult> writeAsync(String scope, long token, String key, String value,
            String idempotencyKey) {
        Supplier<WriteResult> write = () -> store.write(scope, sequencer(scope, token), put(key, value),
                idempotencyKey);
        return CompletableFuture.supplyAsync(write, pool);
    }

    private static void awaitLatch(CountDownLatch latch) {
        try {
            if (!latch.await(WAIT_SECONDS, TimeUnit.SECONDS)) {
                throw new AssertionError("waited " + WAIT_SECONDS + " s for " + latch);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted waiting for " + latch, e);
        }
    }

    /** Writes key t(token) from many threads with tokens drawn from one counter; returns the acknowledged ones. */
    private List<Acknowledged> writeFromManyThreads(String scope)
            throws InterruptedException, ExecutionException, TimeoutException {
        AtomicLong tokens = new AtomicLong();
        List<Acknowledged> acknowledged = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch start = new CountDownLatch(1);
        List<Future<?>> threads = new ArrayList<>();
        for (int thread = 0; thread < THREADS; thread++) {
            threads.add(pool.submit(() -> {
                awaitLatch(start);
                for (int i = 0; i < WRITES_PER_THREAD; i++) {
                    long token = tokens.incrementAndGet(); // drawn before queueing: arrivals interleave
                    long startNanos = System.nanoTime();
                    try {
                        WriteResult result = store.write(scope, sequencer(scope, token), put("t" + token, "v"), null);
                        acknowledged.add(new Acknowledged(token, result, startNanos, System.nanoTime()));
                    } catch (StaleTokenException e) {
                        assertThat(e.accepted()).as("refused orders#%d", token).isGreaterThan(token);
                    }
                }
                return null;
            }));
        }
        start.countDown();
        for (Future<?> thread : threads) {
            thread.get(WAIT_SECONDS * 2, TimeUnit.SECONDS);
        }
        synchronized (acknowledged) {
            return List.copyOf(acknowledged);
        }
    }

    /** In revision order, every write was admissible against the accepted token the ones before it left. */
    private static void assertReplayableInRevisionOrder(List<Acknowledged> acknowledged) {
        long accepted = 0;
        for (Acknowledged write : acknowledged.stream()
                .sorted(Comparator.comparingLong(a -> a.result().revision())).toList()) {
            assertThat(write.token()).as("revision %d admitted below accepted %d", write.result().revision(),
                    accepted).isGreaterThanOrEqualTo(accepted);
            accepted = Math.max(accepted, write.token());
            assertThat(write.result().accepted()).as("accepted after revision %d", write.result().revision())
                    .isEqualTo(accepted);
        }
    }

    /** No acknowledged write has a token below the accepted token of a write acknowledged before it was issued. */
    private static void assertNoneBelowEarlierAcknowledged(List<Acknowledged> acknowledged) {
        List<Acknowledged> byEnd = acknowledged.stream().sorted(Comparator.comparingLong(Acknowledged::endNanos))
                .toList();
        for (Acknowledged write : acknowledged) {
            long acceptedBefore = 0;
            long revisionBefore = 0;
            for (Acknowledged earlier : byEnd) {
                if (earlier.endNanos() - write.startNanos() >= 0) {
                    break;
                }
                acceptedBefore = Math.max(acceptedBefore, earlier.result().accepted());
                revisionBefore = Math.max(revisionBefore, earlier.result().revision());
            }
            assertThat(write.token()).as("orders#%d acknowledged below an earlier acknowledged accepted %d",
                    write.token(), acceptedBefore).isGreaterThanOrEqualTo(acceptedBefore);
            assertThat(write.result().revision()).as("revision of orders#%d", write.token())
                    .isGreaterThan(revisionBefore);
        }
    }
}
