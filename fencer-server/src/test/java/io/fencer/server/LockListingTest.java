package io.fencer.server;

import static io.fencer.server.TestServers.openSession;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.common.util.concurrent.Futures;
import com.google.common.util.concurrent.ListenableFuture;
import io.fencer.api.v1.AcquireRequest;
import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.ListRequest;
import io.fencer.api.v1.ListResponse;
import io.fencer.api.v1.LockInfo;
import io.fencer.api.v1.LockMode;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.OpenSessionRequest;
import io.fencer.api.v1.OpenSessionResponse;
import io.fencer.core.ManualTicker;
import io.fencer.server.TestServers.TestSession;
import io.grpc.ManagedChannel;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Describe and List of locks whose queues and pages would not fit in one answer a client can read (4 MiB by default),
 * on one real server: pages cut by size, queues shown in part and counted whole.
 */
class LockListingTest {
    private static final long TTL_MILLIS = 120_000;
    private static final Duration WAIT_MAX = Duration.ofSeconds(60);
    private static final int CLIENT_MESSAGE_BYTES_MAX = 4 * 1024 * 1024;
    private static final String PADDING = "x".repeat(250);

    @TempDir
    Path dataDir;
    private FencerServer server;
    private ManagedChannel channel;
    private LocksGrpc.LocksBlockingStub stub;
    /** Connections for waits beyond the calls one connection may have open (1,000), kept apart from {@link #stub}'s. */
    private final List<ManagedChannel> waitChannels = new ArrayList<>();

    @BeforeEach
    void start() throws Exception {
        // One identity (anonymous) queues some 30,000 waits and 2,100 sessions here.
        server = FencerServer.start(TestServers.singlePeer(dataDir, new ManualTicker())
                .withQuotas(IdentityQuotas.DEFAULT.withWaitersPerIdentityMax(100_000)));
        channel = TestServers.channel(server);
        stub = TestServers.stub(channel);
        TestServers.awaitServing(server, channel);
    }

    @AfterEach
    void stop() throws Exception {
        for (ManagedChannel waits : waitChannels) {
            TestServers.close(waits);
        }
        TestServers.close(channel);
        server.close();
    }

    @Test
    void list_ofLocksWithLongQueues_pagesUnderAClientsLimitAndListsEachLockOnce() {
        int locks = 1_000;
        int waiters = 30;
        holdAll(openSession(stub, TTL_MILLIS), locks);
        for (int i = 0; i < waiters; i++) {
            queueOnAll(openSession(stub, TTL_MILLIS), locks, i);
        }
        await().atMost(WAIT_MAX).until(() -> TestServers.describe(stub, name(locks - 1)).getWaitersTotal() == waiters);

        ListResponse first = stub.list(ListRequest.newBuilder().setLimit(locks).build());

        assertThat(first.getSerializedSize()).as("bytes of the first page").isLessThan(3 * 1024 * 1024);
        assertThat(first.getMore()).isTrue();
        List<LockInfo> all = new ArrayList<>(first.getLocksList());
        ListResponse page = first;
        while (page.getMore()) {
            page = stub.list(ListRequest.newBuilder().setStartAfter(all.get(all.size() - 1).getLock()).build());
            assertThat(page.getSerializedSize()).isLessThan(3 * 1024 * 1024);
            all.addAll(page.getLocksList());
        }
        assertThat(all).extracting(LockInfo::getLock).containsExactlyElementsOf(
                java.util.stream.IntStream.range(0, locks).mapToObj(LockListingTest::name).toList());
        assertThat(all).allSatisfy(lock -> {
            assertThat(lock.getWaitersTotal()).isEqualTo(waiters);
            assertThat(lock.getWaitersCount()).isEqualTo(waiters);
            assertThat(lock.hasHolder()).isTrue();
        });
        long whole = all.stream().mapToLong(lock -> lock.getSerializedSize() + 4).sum();
        assertThat(whole).as("the control: listed in one answer, as before, a client could not read it")
                .isGreaterThan(CLIENT_MESSAGE_BYTES_MAX);
    }

    @Test
    void describe_ofAQueueAndReadersPastTheShownMax_showsTheFirstAndCountsAll() throws Exception {
        String lock = name(0);
        int readers = 1_100;
        int waiters = 1_050;
        List<ListenableFuture<AcquireResponse>> reads = new ArrayList<>();
        for (TestSession reader : openSessions(readers)) {
            reads.add(future().acquire(acquire(reader, lock, LockMode.LOCK_MODE_SHARED, 0)));
        }
        List<AcquireResponse> granted = Futures.allAsList(reads).get(60, TimeUnit.SECONDS);
        long earliest = granted.stream().mapToLong(grant -> grant.getToken().getValue()).min().orElseThrow();
        List<TestSession> writers = openSessions(waiters);
        for (int i = 0; i < waiters; i++) {
            if (i % 500 == 0) {
                waitChannels.add(TestServers.channel(server));
            }
            LocksGrpc.newFutureStub(waitChannels.get(waitChannels.size() - 1)).withDeadlineAfter(120, TimeUnit.SECONDS)
                    .acquire(acquire(writers.get(i), lock, LockMode.LOCK_MODE_EXCLUSIVE, 100_000));
        }
        await().atMost(WAIT_MAX).until(() -> TestServers.describe(stub, lock).getWaitersTotal() == waiters);

        LockInfo info = TestServers.describe(stub, lock);

        assertThat(info.getSharedHoldersTotal()).isEqualTo(readers);
        assertThat(info.getSharedHoldersCount()).isEqualTo(1_000);
        assertThat(info.getSharedHolders(0).getToken().getValue()).as("grant order: the earliest first")
                .isEqualTo(earliest);
        assertThat(info.getWaitersCount()).isEqualTo(1_000);
        assertThat(info.getSerializedSize()).isLessThan(2 * 1024 * 1024);
        ListResponse listed = stub.list(ListRequest.newBuilder().setPrefix(lock).build());
        assertThat(listed.getLocksList()).containsExactly(info);
        assertThat(listed.getMore()).isFalse();
    }

    private void holdAll(TestSession holder, int locks) {
        for (int first = 0; first < locks; first += 64) {
            assertThat(stub.acquireAll(TestServers.acquireAllRequest(holder, "hold-" + first, 0,
                    LockListingTest::name, first, Math.min(locks, first + 64))).getAcquired()).isTrue();
        }
    }

    /** Queues {@code waiter} on every lock, 64 at a time, each wait under a request id of the longest allowed. */
    private void queueOnAll(TestSession waiter, int locks, int index) {
        for (int first = 0; first < locks; first += 64) {
            String requestId = String.format(Locale.ROOT, "wait-%02d-%04d-", index, first);
            future().acquireAll(TestServers.acquireAllRequest(waiter, requestId + "w".repeat(128 - requestId.length()),
                    100_000, LockListingTest::name, first, Math.min(locks, first + 64)));
        }
    }

    private List<TestSession> openSessions(int count) throws Exception {
        List<ListenableFuture<OpenSessionResponse>> opening = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            opening.add(future().openSession(OpenSessionRequest.newBuilder().setTtlMillis(TTL_MILLIS).build()));
        }
        return Futures.allAsList(opening).get(60, TimeUnit.SECONDS).stream()
                .map(opened -> new TestSession(opened.getSessionId(), opened.getSecret())).toList();
    }

    private static AcquireRequest acquire(TestSession session, String lock, LockMode mode, long waitMillis) {
        return TestServers.acquireRequest(session, lock, "a-" + session.id(), waitMillis).toBuilder().setMode(mode)
                .build();
    }

    private LocksGrpc.LocksFutureStub future() {
        return LocksGrpc.newFutureStub(channel).withDeadlineAfter(120, TimeUnit.SECONDS);
    }

    private static String name(int i) {
        return String.format(Locale.ROOT, "%04d-%s", i, PADDING);
    }
}
