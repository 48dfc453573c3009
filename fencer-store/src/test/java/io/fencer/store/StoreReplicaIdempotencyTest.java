package io.fencer.store;

import static io.fencer.store.StoreTesting.put;
import static io.fencer.store.StoreTesting.sequencer;
import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Replicas of the replicated store must hold the same idempotency records after the same writes, however each
 * replica's committer happened to batch them: the records decide whether a retry in the log replays or applies, so
 * replicas that evicted different records would apply one log entry differently. The batches are forced: one replica
 * takes the writes one at a time, the other in one batch queued behind a group held in the listener.
 */
class StoreReplicaIdempotencyTest {
    private static final long WAIT_SECONDS = 60;
    /** Three keyed writes overfill it; the sweep keeps the newest one (a slack of one free place). */
    private static final int ENTRIES_MAX = 2;

    @TempDir
    Path dir;
    private StoreEngine oneAtATime;
    private StoreEngine batched;
    private final CountDownLatch firstGroupHeld = new CountDownLatch(1);
    private final CountDownLatch releaseFirstGroup = new CountDownLatch(1);

    @AfterEach
    void close() {
        releaseFirstGroup.countDown();
        if (oneAtATime != null) {
            oneAtATime.close();
        }
        if (batched != null) {
            batched.close();
        }
    }

    @Test
    void sweepIdempotency_whenReplicasBatchedInterleavedScopesDifferently_replicasKeepTheSameRecords()
            throws Exception {
        StoreOptions options = StoreOptions.defaults().withIdempotencyEntriesMax(ENTRIES_MAX);
        oneAtATime = StoreEngine.openReplica(dir.resolve("one-at-a-time"), options);
        batched = StoreEngine.openReplica(dir.resolve("batched"), options);

        // the same log: a1 and a2 to scope a, b1 to scope b between them
        oneAtATime.write("z", sequencer("z", 1), put("k", "v"), null);
        oneAtATime.write("a", sequencer("a", 1), put("k", "a1"), "a1");
        oneAtATime.write("b", sequencer("b", 1), put("k", "b1"), "b1");
        oneAtATime.write("a", sequencer("a", 1), put("k", "a2"), "a2");

        batched.groupListener((scope, writes) -> {
            if (scope.equals("z")) {
                firstGroupHeld.countDown();
                await(releaseFirstGroup);
            }
        });
        CompletableFuture<WriteResult> held = batched.writeAsync("z", sequencer("z", 1), put("k", "v"), null);
        await(firstGroupHeld);
        List<CompletableFuture<WriteResult>> queued = List.of(
                batched.writeAsync("a", sequencer("a", 1), put("k", "a1"), "a1"),
                batched.writeAsync("b", sequencer("b", 1), put("k", "b1"), "b1"),
                batched.writeAsync("a", sequencer("a", 1), put("k", "a2"), "a2"));
        assertThat(batched.pendingWrites("a") + batched.pendingWrites("b")).as("queued behind the held group")
                .isEqualTo(3);
        releaseFirstGroup.countDown();
        held.get(WAIT_SECONDS, TimeUnit.SECONDS);
        for (CompletableFuture<WriteResult> write : queued) {
            write.get(WAIT_SECONDS, TimeUnit.SECONDS);
        }

        // every replica sweeps at the end of the log entry, as ReplicatedStore.apply does
        assertThat(oneAtATime.sweepIdempotency()).isEqualTo(batched.sweepIdempotency()).isEqualTo(2);

        // the next log entry: a retry of b1, then of a2; each replica must answer it as the other does
        for (String[] retry : List.of(new String[] {"b", "b1"}, new String[] {"a", "a2"})) {
            String scope = retry[0];
            String key = retry[1];
            WriteResult one = oneAtATime.write(scope, sequencer(scope, 1), put("k", key), key);
            WriteResult other = batched.write(scope, sequencer(scope, 1), put("k", key), key);
            assertThat(other).as("the retry of %s on the replica that batched, against the one that did not", key)
                    .isEqualTo(one);
        }
    }

    private static void await(CountDownLatch latch) {
        try {
            if (!latch.await(WAIT_SECONDS, TimeUnit.SECONDS)) {
                throw new AssertionError("waited " + WAIT_SECONDS + " s for " + latch);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted waiting for " + latch, e);
        }
    }
}
