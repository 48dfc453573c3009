package io.fencer.client.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.api.errors.WireErrors;
import io.fencer.api.v1.FenceRequest;
import io.fencer.client.FencedStore;
import io.fencer.client.Fencer;
import io.fencer.client.ScopeInfo;
import io.fencer.client.StaleWriteException;
import io.fencer.client.StoreOp;
import io.fencer.client.StoreUnit;
import io.fencer.client.StoreValue;
import io.fencer.client.WriteReceipt;
import io.fencer.core.FencePolicy;
import io.fencer.core.FencingToken;
import io.fencer.core.IdempotencyMismatchException;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LimitExceededException;
import io.fencer.core.ScopeMismatchException;
import io.fencer.core.StaleTokenException;
import io.fencer.core.UnavailableException;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The store client against the real engine served over real gRPC ({@link FakeStore}). */
class FencedStoreTest {
    private static final String T31 = new FencingToken("orders", 31).sequencer();
    private static final String T32 = new FencingToken("orders", 32).sequencer();
    private static final String T33 = new FencingToken("orders", 33).sequencer();

    @TempDir
    Path dir;
    private FakeStore server;
    private FencedStore store;

    @BeforeEach
    void start() {
        server = FakeStore.start(dir.resolve("store"));
        store = Fencer.newStoreBuilder().endpoint(server.endpoint()).callTimeout(Duration.ofSeconds(5)).build();
    }

    @AfterEach
    void stop() {
        store.close();
        server.close();
    }

    @Test
    void put_thenGet_returnsTheValueWithItsWriterAndTheAcceptedToken() {
        WriteReceipt receipt = store.put("orders", "order-17", "paid", T32);
        StoreValue read = store.get("orders", "order-17");

        assertThat(receipt).isEqualTo(new WriteReceipt("orders", 32, 32, 1, 1, false));
        assertThat(read.present()).isTrue();
        assertThat(read.valueUtf8()).isEqualTo("paid");
        assertThat(read.writtenBy()).isEqualTo(32);
        assertThat(read.accepted()).isEqualTo(32);
    }

    @Test
    void get_absentKey_isNotPresentAndCarriesTheAcceptedToken() {
        store.put("orders", "a", "1", T32);

        StoreValue read = store.get("orders", "missing");

        assertThat(read.present()).isFalse();
        assertThat(read.value()).isNull();
        assertThat(read.writtenBy()).isZero();
        assertThat(read.accepted()).isEqualTo(32);
    }

    @Test
    void put_firstWriteRefusedByTheLockServiceBesideTheStore_throwsStaleWriteSayingWhy() {
        String why = "the scope has accepted no token yet, and the lock service beside this store has superseded this"
                + " grant: lock 'orders' is at token 33 there";
        server.failNext("Write", WireErrors.toStatusException(new StaleTokenException("orders",
                31, 33, FencePolicy.AT_LEAST, why)));

        assertThatThrownBy(() -> store.put("orders", "order-17", "by paused A", T31))
                .isInstanceOfSatisfying(StaleWriteException.class, e -> {
                    assertThat(e.why()).isEqualTo(why);
                    assertThat(e.acceptedToken()).isEqualTo(new FencingToken("orders", 33));
                    assertThat(e).hasMessage("stale token orders#31 refused by scope 'orders': " + why);
                });
        assertThat(store.fence("orders").exists()).as("the refused write took nothing").isFalse();
    }

    @Test
    void put_olderToken_throwsStaleWriteNamingBothTokensAndChangesNothing() {
        store.put("orders", "order-17", "by B", T32);

        assertThatThrownBy(() -> store.put("orders", "order-17", "by paused A", T31))
                .isInstanceOfSatisfying(StaleWriteException.class, e -> {
                    assertThat(e.scope()).isEqualTo("orders");
                    assertThat(e.token()).isEqualTo(new FencingToken("orders", 31));
                    assertThat(e.presented()).isEqualTo(31);
                    assertThat(e.accepted()).isEqualTo(32);
                    assertThat(e.acceptedToken()).isEqualTo(new FencingToken("orders", 32));
                    assertThat(e.retried()).isFalse();
                    assertThat(e).hasMessage("stale token orders#31 refused by scope 'orders': accepted orders#32");
                });
        assertThat(store.get("orders", "order-17").valueUtf8()).isEqualTo("by B");
        assertThat(store.fence("orders").revision()).isEqualTo(1);
    }

    @Test
    void get_fencedByAnOlderToken_isRefusedStaleAndByTheCurrentTokenReads() {
        store.put("orders", "k", "v", T32);

        assertThatThrownBy(() -> store.get("orders", "k", T31)).isInstanceOfSatisfying(StaleWriteException.class,
                e -> assertThat(e.accepted()).isEqualTo(32));
        assertThat(store.get("orders", "k", T32).valueUtf8()).isEqualTo("v");
    }

    @Test
    void write_severalOps_appliesThemAllInOneRevision() {
        store.put("orders", "old", "x", T32);

        WriteReceipt receipt = store.write("orders", T33, List.of(StoreOp.put("a", "1"), StoreOp.put("b", "2"),
                StoreOp.delete("old")), null);

        assertThat(receipt.opsApplied()).isEqualTo(3);
        assertThat(receipt.revision()).isEqualTo(2);
        assertThat(store.get("orders", "a").valueUtf8()).isEqualTo("1");
        assertThat(store.get("orders", "b").valueUtf8()).isEqualTo("2");
        assertThat(store.get("orders", "old").present()).isFalse();
    }

    @Test
    void write_oneOpOverALimit_appliesNothing() {
        byte[] hugeKey = new byte[2_000];

        assertThatThrownBy(() -> store.write("orders", T32, List.of(StoreOp.put("a", "1"),
                StoreOp.put(hugeKey, "2".getBytes(StandardCharsets.UTF_8))), null))
                .isInstanceOf(InvalidArgumentException.class).hasMessageContaining("2000");
        assertThat(store.get("orders", "a").present()).isFalse();
        assertThat(store.fence("orders").exists()).isFalse();
    }

    @Test
    void write_idempotentAnswerLost_retriesAndGetsTheFirstResultWithoutApplyingTwice() {
        server.loseNextAnswer("Write", FakeStore.unavailable());

        WriteReceipt receipt = store.write("orders", T32, List.of(StoreOp.put("k", "v")), "order-17-paid");

        assertThat(server.count("Write")).isEqualTo(2);
        assertThat(receipt.replayed()).isTrue();
        assertThat(receipt.revision()).isEqualTo(1);
        assertThat(store.fence("orders").revision()).isEqualTo(1);
    }

    @Test
    void write_sameIdempotencyKeyAndTokenWithOtherOps_throwsIdempotencyMismatchAndAppliesNothing() {
        WriteReceipt first = store.write("orders", T32, List.of(StoreOp.put("k", "paid")), "order-17");

        assertThatThrownBy(() -> store.write("orders", T32, List.of(StoreOp.put("k", "refunded")), "order-17"))
                .isInstanceOfSatisfying(IdempotencyMismatchException.class, e -> {
                    assertThat(e.scope()).isEqualTo("orders");
                    assertThat(e.idempotencyKey()).isEqualTo("order-17");
                    assertThat(e.token()).isEqualTo(32);
                }).hasMessageNotContaining("refunded");
        assertThat(server.count("Write")).as("a refusal is not retried").isEqualTo(2);
        assertThat(store.get("orders", "k").valueUtf8()).isEqualTo("paid");
        assertThat(store.write("orders", T32, List.of(StoreOp.put("k", "paid")), "order-17"))
                .isEqualTo(new WriteReceipt("orders", 32, 32, first.revision(), 1, true));
    }

    @Test
    void write_withoutIdempotencyKeyAnswerLost_isUnavailableSayingItMayHaveHappened() {
        server.loseNextAnswer("Write", FakeStore.unavailable());

        assertThatThrownBy(() -> store.put("orders", "k", "v", T32)).isInstanceOf(UnavailableException.class)
                .hasMessageContaining("may or may not have taken effect");
        assertThat(server.count("Write")).as("never retried without an idempotency key").isEqualTo(1);
        assertThat(store.get("orders", "k").valueUtf8()).as("it did happen, unknown to the client").isEqualTo("v");
    }

    @Test
    void write_idempotentRetryAfterANewerTokenWrote_isStaleAndSaysTheFirstAttemptMayHaveApplied() {
        server.loseNextAnswer("Write", FakeStore.unavailable(), () -> server.engine.write("orders", T33,
                List.of(io.fencer.store.Op.put(bytes("k"), bytes("B"))), null));

        assertThatThrownBy(() -> store.write("orders", T32, List.of(StoreOp.put("k", "A")), "key-a"))
                .isInstanceOfSatisfying(StaleWriteException.class, e -> {
                    assertThat(e.retried()).isTrue();
                    assertThat(e).hasMessageContaining("may have been applied");
                });
        assertThat(server.count("Write")).isEqualTo(2);
        assertThat(store.get("orders", "k").valueUtf8()).isEqualTo("B");
    }

    private static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    @Test
    void write_storeRefusesConnections_isUnavailableSayingNothingWasSent() {
        String endpoint = FakeServer.refusedEndpoint();
        try (FencedStore down = Fencer.newStoreBuilder().endpoint(endpoint).callTimeout(Duration.ofSeconds(1))
                .build()) {
            long startNanos = System.nanoTime();
            assertThatThrownBy(() -> down.write("orders", T32, List.of(StoreOp.put("k", "v")), "idem"))
                    .isInstanceOf(UnavailableException.class)
                    .hasMessageContaining("cannot connect to the store at " + endpoint + " (connection refused, for ")
                    .hasMessageEndingWith("ms); nothing was sent").hasMessageNotContaining("may or may not");
            assertThat(Duration.ofNanos(System.nanoTime() - startNanos)).isLessThan(Duration.ofSeconds(5));
        }
    }

    /**
     * Regression: a call whose every attempt was refused, ended by its call timeout before the (longer) unreachable
     * timeout, said the store "did not answer" and that the write "may or may not have taken effect"; nothing had been
     * sent. With the two timeouts equal (the default) which of them ended the call was a race, and so was the message.
     */
    @Test
    void write_refusedUntilTheCallTimeoutEndsItBeforeTheUnreachableTimeout_saysNothingWasSent() {
        String endpoint = FakeServer.refusedEndpoint();
        try (FencedStore down = Fencer.newStoreBuilder().endpoint(endpoint).callTimeout(Duration.ofSeconds(1))
                .unreachableTimeout(Duration.ofSeconds(30)).build()) {
            long startNanos = System.nanoTime();
            assertThatThrownBy(() -> down.write("orders", T32, List.of(StoreOp.put("k", "v")), "idem"))
                    .isInstanceOf(UnavailableException.class)
                    .hasMessageContaining("cannot connect to the store at " + endpoint + " (connection refused, for ")
                    .hasMessageEndingWith("ms); nothing was sent").hasMessageNotContaining("may or may not");
            assertThat(Duration.ofNanos(System.nanoTime() - startNanos)).as("ended by the call timeout, less a retry pause it had no time for")
                    .isBetween(Duration.ofMillis(750), Duration.ofSeconds(10));
        }
    }

    @Test
    void write_storeAcceptsButNeverAnswers_isUnavailableMayOrMayNotHaveTakenEffect() throws IOException {
        // The kernel completes connections into the backlog of a socket nobody accepts from: connected, silent.
        try (ServerSocket silent = new ServerSocket(0, 8, InetAddress.getByName("127.0.0.1"));
                FencedStore store = Fencer.newStoreBuilder().endpoint("127.0.0.1:" + silent.getLocalPort())
                        .callTimeout(Duration.ofSeconds(1)).build()) {
            assertThatThrownBy(() -> store.write("orders", T32, List.of(StoreOp.put("k", "v")), "idem"))
                    .isInstanceOf(UnavailableException.class).hasMessageContaining("did not answer")
                    .hasMessageContaining("may or may not have taken effect")
                    .hasMessageNotContaining("nothing was sent");
        }
    }

    @Test
    void write_malformedSequencer_failsBeforeSending() {
        assertThatThrownBy(() -> store.put("orders", "k", "v", "fencer1.garbage"))
                .isInstanceOf(InvalidArgumentException.class).hasMessageContaining("malformed sequencer");
        assertThat(server.calls).isEmpty();
    }

    @Test
    void write_tokenOfAnotherLock_isScopeMismatchNeverCompared() {
        store.put("orders", "k", "v", T32);

        assertThatThrownBy(() -> store.put("orders", "k", "w", new FencingToken("billing", 99).sequencer()))
                .isInstanceOfSatisfying(ScopeMismatchException.class, e -> {
                    assertThat(e.scope()).isEqualTo("orders");
                    assertThat(e.tokenLock()).isEqualTo("billing");
                });
        assertThat(store.get("orders", "k").valueUtf8()).isEqualTo("v");
    }

    @Test
    void createScope_strict_refusesASecondWriteOfTheSameToken() {
        String token = new FencingToken("ledger-lock", 5).sequencer();
        ScopeInfo created = store.createScope("ledger", FencePolicy.STRICT, token);
        store.put("ledger", "k", "once", token);

        assertThat(created).isEqualTo(new ScopeInfo("ledger", "ledger-lock", FencePolicy.STRICT, 0, 0, true));
        assertThatThrownBy(() -> store.put("ledger", "k", "twice", token))
                .isInstanceOfSatisfying(StaleWriteException.class, e -> {
                    assertThat(e.presented()).isEqualTo(5);
                    assertThat(e.accepted()).isEqualTo(5);
                    assertThat(e).hasMessage("stale token ledger-lock#5 refused by scope 'ledger': accepted "
                            + "ledger-lock#5");
                });
        assertThat(store.fence("ledger")).isEqualTo(new ScopeInfo("ledger", "ledger-lock", FencePolicy.STRICT, 5, 1,
                true));
    }

    @Test
    void fence_newScope_doesNotExist() {
        assertThat(store.fence("nothing-yet")).isEqualTo(new ScopeInfo("nothing-yet", "nothing-yet",
                FencePolicy.AT_LEAST, 0, 0, false));
    }

    @Test
    void fence_storeAnswersUnavailableOnce_isRetried() {
        store.put("orders", "k", "v", T32);
        server.failNext("Fence", FakeStore.unavailable());

        assertThat(store.fence("orders").accepted()).isEqualTo(32);
        assertThat(server.count("Fence")).isEqualTo(2);
    }

    @Test
    void fence_retryPauseOversleepsTheCallTimeout_failsWithTheRealErrorWithoutAnotherAttempt() {
        server.failNext("Fence", FakeStore.unavailable());
        // A thread descheduled on a loaded machine wakes from its backoff after the call's timeout has passed.
        long timeoutNanos = Duration.ofMillis(300).toNanos();
        try (StoreConnection connection = new StoreConnection(server.endpoint(), timeoutNanos,
                nanos -> TimeUnit.NANOSECONDS.sleep(nanos + timeoutNanos))) {
            int[] attempts = new int[1];
            FenceRequest request = FenceRequest.newBuilder().setScope("orders").build();

            assertThatThrownBy(() -> connection.call("Fence of scope 'orders'", StoreConnection.Retry.IDEMPOTENT,
                    attempts, calls -> calls.stub().fence(request)))
                    .isInstanceOf(UnavailableException.class)
                    .hasMessageContaining("(1 attempt within 300 ms; last error: UNAVAILABLE")
                    .hasMessageNotContaining("DEADLINE_EXCEEDED");
            assertThat(attempts[0]).isEqualTo(1);
            assertThat(server.count("Fence")).isEqualTo(1);
        }
    }

    /**
     * Regression: a call retried while its client closed made a channel to the next store after the close and sent
     * the call there: the close had shut every channel it knew of, and the new one was never shut down. The close
     * comes here in the retry's pause; the other store must see nothing.
     */
    @Test
    void call_clientClosedWhileItPausesBeforeARetry_endsWithoutReachingAnotherStore() {
        server.failNext("Fence", FakeStore.unavailable());
        try (FakeStore other = FakeStore.start(dir.resolve("other"))) {
            AtomicReference<StoreConnection> self = new AtomicReference<>();
            StoreConnection connection = new StoreConnection(server.endpoint() + "," + other.endpoint(),
                    Duration.ofSeconds(5).toNanos(), nanos -> self.get().close());
            self.set(connection);
            FenceRequest request = FenceRequest.newBuilder().setScope("orders").build();

            assertThatThrownBy(() -> connection.call("Fence of scope 'orders'", StoreConnection.Retry.IDEMPOTENT,
                    null, calls -> calls.stub().fence(request)))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
            assertThat(server.count("Fence")).as("the first attempt").isEqualTo(1);
            assertThat(other.count("Fence")).as("no attempt after the close").isZero();
        }
    }

    @Test
    void unit_putsThenCommit_appliesAllAtOnce() {
        try (StoreUnit unit = store.beginUnit("orders", T32, Duration.ofSeconds(30))) {
            unit.put("a", "1");
            unit.put("b", "2");
            assertThat(store.get("orders", "a").present()).as("nothing visible before the commit").isFalse();

            WriteReceipt receipt = unit.commit();

            assertThat(receipt.opsApplied()).isEqualTo(2);
        }
        assertThat(store.get("orders", "a").valueUtf8()).isEqualTo("1");
        assertThat(store.get("orders", "b").valueUtf8()).isEqualTo("2");
        assertThat(server.count("AbortUnit")).as("a committed unit is not aborted on close").isZero();
    }

    @Test
    void unit_closedWithoutCommit_isAbortedAndFreesTheScope() {
        try (StoreUnit unit = store.beginUnit("orders", T32, Duration.ofSeconds(30))) {
            unit.put("a", "1");
        }

        assertThat(server.count("AbortUnit")).isEqualTo(1);
        assertThat(store.get("orders", "a").present()).isFalse();
        assertThat(store.put("orders", "a", "2", T32).revision()).as("the same token writes again").isEqualTo(1);
    }

    @Test
    void unit_preemptedByAHigherToken_commitIsStaleAndNothingOfItIsVisible() {
        StoreUnit unit = store.beginUnit("orders", T32, Duration.ofSeconds(30));
        unit.put("a", "from the unit");
        store.put("orders", "b", "from the newer holder", T33);

        assertThatThrownBy(unit::commit).isInstanceOfSatisfying(StaleWriteException.class, e -> {
            assertThat(e.presented()).isEqualTo(32);
            assertThat(e.accepted()).isEqualTo(33);
        });
        assertThatThrownBy(unit::commit).isInstanceOf(IllegalStateException.class);
        unit.close();
        assertThat(store.get("orders", "a").present()).isFalse();
        assertThat(store.get("orders", "b").valueUtf8()).isEqualTo("from the newer holder");
    }

    @Test
    void unit_sameTokenWritesWhileOpen_isRefusedAsBusy() {
        try (StoreUnit unit = store.beginUnit("orders", T32, Duration.ofSeconds(30))) {
            assertThatThrownBy(() -> store.put("orders", "x", "y", T32)).isInstanceOf(LimitExceededException.class)
                    .hasMessageContaining(unit.id());
        }
    }

    @Test
    void beginUnit_staleToken_isStaleWrite() {
        store.put("orders", "k", "v", T32);

        assertThatThrownBy(() -> store.beginUnit("orders", T31, Duration.ofSeconds(5)))
                .isInstanceOf(StaleWriteException.class);
    }

    @Test
    void closedStore_refusesCallsAsProgrammerError() {
        store.close();

        assertThatThrownBy(() -> store.get("orders", "k")).isInstanceOf(IllegalStateException.class)
                .hasMessage("the FencedStore is closed");
    }

    @Test
    void builder_badSettings_failFastNamingThem() {
        assertThatThrownBy(() -> Fencer.newStoreBuilder().build()).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("endpoint");
        assertThatThrownBy(() -> Fencer.newStoreBuilder().endpoint("nohost"))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'nohost'");
        assertThatThrownBy(() -> Fencer.newStoreBuilder().callTimeout(Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("PT0S");
        assertThatThrownBy(() -> store.beginUnit("orders", T32, Duration.ofMinutes(2)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("60000 ms");
    }
}
