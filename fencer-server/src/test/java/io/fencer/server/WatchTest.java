package io.fencer.server;

import static io.fencer.server.TestServers.acquire;
import static io.fencer.server.TestServers.closeSession;
import static io.fencer.server.TestServers.openSession;
import static io.fencer.server.TestServers.release;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.EndCause;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.FencingToken;
import io.fencer.api.v1.LockEvent;
import io.fencer.api.v1.LockEvent.Kind;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.Reason;
import io.fencer.core.ManualTicker;
import io.fencer.server.TestServers.TestSession;
import io.fencer.server.watch.WatchLimits;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Watch on one real server (Ratis, gRPC): events in log order with their positions, resume, limits, bad input. */
class WatchTest {
    private static final long TTL_MILLIS = 60_000;

    @TempDir
    Path dataDir;
    private final ManualTicker ticker = new ManualTicker();
    private FencerServer server;
    private ManagedChannel channel;
    private LocksGrpc.LocksBlockingStub stub;
    private final List<Watching> watches = new ArrayList<>();

    private void start(WatchLimits limits) {
        try {
            server = FencerServer.start(TestServers.singlePeer(dataDir, ticker).withWatchLimits(limits));
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
        channel = TestServers.channel(server);
        stub = TestServers.stub(channel);
        TestServers.awaitServing(server, channel);
    }

    @AfterEach
    void stop() throws Exception {
        watches.forEach(Watching::cancel);
        if (channel != null) {
            TestServers.close(channel);
        }
        if (server != null) {
            server.close();
        }
    }

    private Watching watch(String prefix, long revision, int ordinal) {
        Watching watching = Watching.start(channel, Watching.from(prefix, revision, ordinal));
        watches.add(watching);
        return watching;
    }

    @Test
    void watch_grantsQueuesAndReleases_streamsThemInLogOrderUnderThePrefix() throws Exception {
        start(WatchLimits.DEFAULT);
        Watching watching = watch("orders/", 0, 0);
        LockEvent start = watching.next();
        TestSession first = openSession(stub, TTL_MILLIS);
        TestSession second = openSession(stub, TTL_MILLIS);

        FencingToken granted = acquire(stub, first, "orders/a", 0).getToken();
        acquire(stub, first, "billing/x", 0); // another prefix: not watched
        var waiting = LocksGrpc.newFutureStub(channel).acquire(
                TestServers.acquireRequest(second, "orders/a", "w", 30_000));
        await().until(() -> TestServers.waiterSessions(stub, "orders/a").contains(second.id()));
        FencingToken next = release(stub, first, granted).getNext();
        closeSession(stub, second);

        assertThat(start.getKind()).isEqualTo(Kind.KIND_START);
        assertThat(waiting.get().getAcquired()).isTrue();
        List<LockEvent> events = watching.next(5);
        assertThat(events).extracting(WatchTest::describe).containsExactly(
                "GRANTED orders/a #" + granted.getValue() + " session " + first.id(),
                "QUEUED orders/a session " + second.id(),
                "RELEASED orders/a #" + granted.getValue() + " session " + first.id() + " END_CAUSE_RELEASED",
                "GRANTED orders/a #" + next.getValue() + " session " + second.id(),
                "RELEASED orders/a #" + next.getValue() + " session " + second.id() + " END_CAUSE_SESSION_CLOSED");
        assertThat(events.get(0).getRevision()).as("the start names the grant's revision")
                .isGreaterThanOrEqualTo(start.getRevision());
        assertPositionsIncrease(events);
        assertThat(events.get(2).getRevision()).as("release and next grant: one entry")
                .isEqualTo(events.get(3).getRevision());
        assertThat(events.get(3).getOrdinal()).isEqualTo(events.get(2).getOrdinal() + 1);
        assertThat(events.get(0).getToken().getSequencer()).as("unsigned").isEqualTo(granted.getSequencer());
        assertThat(watching.drained()).as("nothing of billing/").isEmpty();
    }

    @Test
    void watch_resumedAfterTheLastEventReceived_missesNothingAndRepeatsNothing() throws Exception {
        start(WatchLimits.DEFAULT);
        Watching uninterrupted = watch("", 0, 0);
        Watching first = watch("", 0, 0);
        uninterrupted.next();
        first.next();
        TestSession session = openSession(stub, TTL_MILLIS);
        TestSession other = openSession(stub, TTL_MILLIS);
        FencingToken token = acquire(stub, session, "a", 0).getToken();
        var waiting = LocksGrpc.newFutureStub(channel).acquire(TestServers.acquireRequest(other, "a", "w", 30_000));
        await().until(() -> TestServers.waiterSessions(stub, "a").contains(other.id()));
        List<LockEvent> before = first.next(2); // GRANTED, QUEUED
        first.cancel();
        release(stub, session, token); // RELEASED + GRANTED in one entry, while nobody resumes
        AcquireResponse next = waiting.get();
        release(stub, other, next.getToken());

        LockEvent last = before.get(1);
        Watching resumed = watch("", last.getRevision(), last.getOrdinal() + 1);
        LockEvent resumedStart = resumed.next();
        List<LockEvent> after = resumed.next(3);

        assertThat(resumedStart.getKind()).isEqualTo(Kind.KIND_START);
        assertThat(resumedStart.getRevision()).isEqualTo(last.getRevision());
        List<LockEvent> joined = new ArrayList<>(before);
        joined.addAll(after);
        assertThat(joined).as("split and resumed = uninterrupted").isEqualTo(uninterrupted.next(5));
        assertThat(resumed.drained()).isEmpty();
    }

    @Test
    void watch_resumedInsideOneEntry_startsAtTheOrdinalAsked() throws Exception {
        start(WatchLimits.DEFAULT);
        Watching all = watch("", 0, 0);
        all.next();
        TestSession session = openSession(stub, TTL_MILLIS);
        TestSession other = openSession(stub, TTL_MILLIS);
        FencingToken token = acquire(stub, session, "a", 0).getToken();
        var waiting = LocksGrpc.newFutureStub(channel).acquire(TestServers.acquireRequest(other, "a", "w", 30_000));
        await().until(() -> TestServers.waiterSessions(stub, "a").contains(other.id()));
        release(stub, session, token);
        waiting.get();
        List<LockEvent> events = all.next(4);
        LockEvent released = events.get(2);

        Watching fromTheGrant = watch("", released.getRevision(), released.getOrdinal() + 1);

        assertThat(fromTheGrant.next().getKind()).isEqualTo(Kind.KIND_START);
        assertThat(fromTheGrant.next()).as("the grant, not its release again").isEqualTo(events.get(3));
    }

    @Test
    void watch_fromAFutureRevision_failsInvalidArgumentNamingTheValue() throws Exception {
        start(WatchLimits.DEFAULT);
        long future = server.appliedIndex() + 1_000;

        StatusRuntimeException error = watch("", future, 0).error();

        assertThat(error.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
        ErrorDetail detail = TestServers.detail(error);
        assertThat(detail.getReason()).isEqualTo(Reason.REASON_INVALID_ARGUMENT);
        assertThat(detail.getField()).isEqualTo("from_revision");
        assertThat(detail.getValue()).isEqualTo(Long.toString(future));
        assertThat(detail.getMessage()).contains(Long.toString(future), "future");
        // Control: the next revision itself is no future.
        assertThat(watch("", server.appliedIndex() + 1, 0).next().getKind()).isEqualTo(Kind.KIND_START);
    }

    @Test
    void watch_fromARevisionTheHistoryDropped_failsOutOfRangeNamingTheOldestKept() throws Exception {
        start(new WatchLimits(10, 4));
        Watching all = watch("", 0, 0);
        long firstRevision = all.next().getRevision();
        TestSession session = openSession(stub, TTL_MILLIS);
        for (int i = 0; i < 4; i++) {
            release(stub, session, acquire(stub, session, "a", 0).getToken()); // 8 events, 4 kept
        }
        List<LockEvent> events = all.next(8);

        StatusRuntimeException error = watch("", firstRevision, 0).error();

        assertThat(error.getStatus().getCode()).isEqualTo(Status.Code.OUT_OF_RANGE);
        ErrorDetail detail = TestServers.detail(error);
        assertThat(detail.getReason()).isEqualTo(Reason.REASON_OUT_OF_RANGE);
        long oldestKept = events.get(4).getRevision();
        assertThat(detail.getOldestRevision()).isEqualTo(oldestKept);
        assertThat(detail.getValue()).isEqualTo(Long.toString(firstRevision));
        assertThat(detail.getMessage()).contains(Long.toString(firstRevision), Long.toString(oldestKept));
        // Control: from the oldest revision kept, the history is whole.
        Watching fromOldest = watch("", oldestKept, 0);
        fromOldest.next();
        assertThat(fromOldest.next(4)).isEqualTo(events.subList(4, 8));
    }

    @Test
    void watch_pastWatchersMax_failsLimitExceededNamingTheLimit() throws Exception {
        start(new WatchLimits(2, 1_000));
        Watching first = watch("", 0, 0);
        watch("", 0, 0).next();
        first.next();

        StatusRuntimeException error = watch("", 0, 0).error();

        assertThat(error.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
        ErrorDetail detail = TestServers.detail(error);
        assertThat(detail.getReason()).isEqualTo(Reason.REASON_LIMIT_EXCEEDED);
        assertThat(detail.getLimit()).isEqualTo("watchersMax");
        assertThat(detail.getLimitValue()).isEqualTo(2);
        // Control: once a watcher leaves, its place is free again.
        first.cancel();
        await().ignoreExceptions().untilAsserted(() -> {
            Watching again = Watching.start(channel, Watching.from("", 0, 0));
            watches.add(again);
            assertThat(again.next().getKind()).isEqualTo(Kind.KIND_START);
        });
    }

    /**
     * A watcher that stops reading holds no buffer on the server: the history moves past it, and it is ended with
     * the limit of the history. The control, a reading watcher on the same events, sees them all and stays open.
     */
    @Test
    void watch_watcherThatStopsReading_isEndedWhenTheHistoryPassesItNotBuffered() throws Exception {
        int kept = 64;
        start(new WatchLimits(10, kept));
        // The smallest HTTP/2 window a client grants (64 KiB): what a stalled client lets the server send it.
        ManagedChannel small = io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder
                .forAddress("127.0.0.1", server.port()).usePlaintext().flowControlWindow(65_535).build();
        Watching stalled = Watching.start(small, Watching.from("", 0, 0), false);
        Watching reading = watch("", 0, 0);
        reading.next();
        TestSession session = openSession(stub, TTL_MILLIS);
        String longName = "x".repeat(240);
        int grants = 600; // about 600 KB of events: more than HTTP/2 windows and gRPC buffers hold
        for (int i = 0; i < grants; i++) {
            // One after another: the reading watcher keeps up with each, so only not reading makes a watcher lag.
            assertThat(acquire(stub, session, longName + i, 0).getAcquired()).isTrue();
        }

        assertThat(reading.next(grants)).extracting(LockEvent::getKind).containsOnly(Kind.KIND_GRANTED);
        await().untilAsserted(() -> assertThat(server.watchStreams()).as("the server ended the stalled stream")
                .isEqualTo(1));
        stalled.read(); // gRPC hands the stream's end to a client only after the messages before it
        StatusRuntimeException error = stalled.error();
        assertThat(stalled.skipped()).as("what the transport held for it, not all 600").isLessThan(grants);
        assertThat(error.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
        ErrorDetail detail = TestServers.detail(error);
        assertThat(detail.getLimit()).isEqualTo("watchEventsKeptMax");
        assertThat(detail.getLimitValue()).isEqualTo(kept);
        assertThat(reading.drained()).as("the reading watcher stays open").isEmpty();
        String metrics = java.net.http.HttpClient.newHttpClient().send(java.net.http.HttpRequest.newBuilder(
                java.net.URI.create("http://127.0.0.1:" + server.adminPort() + "/metrics")).build(),
                java.net.http.HttpResponse.BodyHandlers.ofString()).body();
        assertThat(metrics).contains("fencer_watch_behind_ends_total 1.0", "fencer_watch_streams 1.0",
                "fencer_watch_events_kept " + kept + ".0");
        TestServers.close(small);
    }

    @Test
    void watch_expiredSession_reportsExpiredGrantsAndEndedWaits() throws Exception {
        start(WatchLimits.DEFAULT);
        Watching watching = watch("", 0, 0);
        watching.next();
        TestSession holder = openSession(stub, 2_000);
        TestSession waiter = openSession(stub, TTL_MILLIS);
        FencingToken token = acquire(stub, holder, "a", 0).getToken();
        var waiting = LocksGrpc.newFutureStub(channel).acquire(TestServers.acquireRequest(waiter, "a", "w", 30_000));
        await().until(() -> TestServers.waiterSessions(stub, "a").contains(waiter.id()));

        ticker.advance(Duration.ofMillis(2_001));

        AcquireResponse next = waiting.get();
        closeSession(stub, waiter);
        assertThat(watching.next(5)).extracting(WatchTest::describe).containsExactly(
                "GRANTED a #" + token.getValue() + " session " + holder.id(),
                "QUEUED a session " + waiter.id(),
                "EXPIRED a #" + token.getValue() + " session " + holder.id() + " END_CAUSE_SESSION_EXPIRED",
                "GRANTED a #" + next.getToken().getValue() + " session " + waiter.id(),
                "RELEASED a #" + next.getToken().getValue() + " session " + waiter.id() + " END_CAUSE_SESSION_CLOSED");
    }

    @Test
    void watch_cancelledWait_reportsTheWaitEnded() throws Exception {
        start(WatchLimits.DEFAULT);
        Watching watching = watch("", 0, 0);
        watching.next();
        TestSession holder = openSession(stub, TTL_MILLIS);
        TestSession waiter = openSession(stub, TTL_MILLIS);
        acquire(stub, holder, "a", 0);

        AcquireResponse timedOut = acquire(stub, waiter, "a", 300); // its wait passes: the wait is cancelled

        assertThat(timedOut.getAcquired()).isFalse();
        assertThat(watching.next(3)).extracting(WatchTest::describe).endsWith(
                "QUEUED a session " + waiter.id(), "WAIT_ENDED a session " + waiter.id());
    }

    @Test
    void watch_withoutReadOnTheWholePrefix_isRefusedPermissionDenied() throws Exception {
        Path acl = java.nio.file.Files.writeString(dataDir.resolve("fencer.acl"),
                "alice read orders/\nbob lock *\n* read warm-up\n* lock warm-up\n");
        server = FencerServer.start(TestServers.singlePeer(dataDir.resolve("data"), ticker).withAcl(acl),
                io.fencer.server.rpc.TestIdentities.fromHeader());
        channel = TestServers.channel(server);
        TestServers.awaitServing(server, channel);
        var alice = io.fencer.server.rpc.TestIdentities.as("alice");

        Watching allLocks = Watching.start(channel, Watching.from("", 0, 0), alice);
        Watching ofBob = Watching.start(channel, Watching.from("orders/", 0, 0),
                io.fencer.server.rpc.TestIdentities.as("bob"));
        Watching orders = Watching.start(channel, Watching.from("orders/", 0, 0), alice);
        watches.add(orders);

        ErrorDetail refused = TestServers.detail(allLocks.error());
        assertThat(refused.getReason()).isEqualTo(Reason.REASON_PERMISSION_DENIED);
        assertThat(refused.getIdentity()).isEqualTo("alice");
        assertThat(refused.getPermission()).isEqualTo("read");
        assertThat(TestServers.detail(ofBob.error()).getIdentity()).as("lock does not include read").isEqualTo("bob");
        assertThat(orders.next().getKind()).as("control: read on the prefix").isEqualTo(Kind.KIND_START);
    }

    private static void assertPositionsIncrease(List<LockEvent> events) {
        for (int i = 1; i < events.size(); i++) {
            LockEvent previous = events.get(i - 1);
            LockEvent event = events.get(i);
            assertThat(event.getRevision() > previous.getRevision() || (event.getRevision() == previous.getRevision()
                    && event.getOrdinal() > previous.getOrdinal())).as("%s after %s", event, previous).isTrue();
        }
    }

    static String describe(LockEvent event) {
        String kind = event.getKind().name().substring("KIND_".length());
        String token = event.hasToken() ? " #" + event.getToken().getValue() : "";
        String cause = event.getEndCause() == EndCause.END_CAUSE_UNSPECIFIED ? "" : " " + event.getEndCause();
        return kind + " " + event.getLock() + token + " session " + event.getSessionId() + cause;
    }
}
