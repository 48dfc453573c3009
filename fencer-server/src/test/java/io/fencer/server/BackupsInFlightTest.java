package io.fencer.server;

import static io.fencer.server.TestServers.acquire;
import static io.fencer.server.TestServers.openSession;
import static io.fencer.server.TestServers.release;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.awaitility.Awaitility.await;

import com.google.common.util.concurrent.ListenableFuture;
import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.AdminGrpc;
import io.fencer.api.v1.BackupChunk;
import io.fencer.api.v1.BackupRequest;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.FencingToken;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.Reason;
import io.fencer.api.v1.StoreBackupChunk;
import io.fencer.api.v1.StoreBackupRequest;
import io.fencer.api.v1.StoreGrpc;
import io.fencer.api.v1.WriteRequest;
import io.fencer.core.ManualTicker;
import io.fencer.server.StoreServiceTest.StoreTesting;
import io.fencer.server.TestServers.TestSession;
import io.fencer.server.net.PortLimits;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ForwardingClientCall;
import io.grpc.ForwardingClientCallListener;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Backups in flight on one server are bounded per kind (lock backups, store backups): each holds its whole file or a
 * store snapshot until its client has read it, so clients that open backups and never read them must not exhaust the
 * server's memory. Over the bound a backup is refused naming the limit; a cancelled backup frees its slot, and so does
 * one whose client takes nothing for the stall timeout; lock calls are served throughout.
 *
 * <p>The backups are larger than one 1 MiB chunk and the non-reading client has a 64 KiB HTTP/2 window, so the
 * server cannot finish sending them and they stay in flight until cancelled or, on the second server, ended by its
 * short stall timeout.
 */
class BackupsInFlightTest {
    private static final long TTL_MILLIS = 600_000;
    private static final int WINDOW_BYTES = 64 * 1024;
    private static final int LONG_NAME_LOCKS = 6_000;
    private static final Duration WAIT_MAX = Duration.ofSeconds(30);
    /** The bound on backups in flight of each kind on one server, as operations.md documents it. */
    private static final int BACKUPS_IN_FLIGHT_MAX = 2;

    /** The stall timeout of the second server's backups: short, so that a test sees one end. */
    private static final Duration STALL_TIMEOUT = Duration.ofMillis(1_500);

    @TempDir
    static Path dataDir;
    @TempDir
    static Path stallingDataDir;
    private static FencerServer server;
    private static ManagedChannel channel;
    private static ManagedChannel unreadChannel;
    /** A server that ends a backup whose client takes nothing for {@link #STALL_TIMEOUT}. */
    private static FencerServer stallingServer;
    private static ManagedChannel stallingChannel;
    private static ManagedChannel stallingUnreadChannel;

    @BeforeAll
    static void start() throws Exception {
        server = FencerServer.start(TestServers.singlePeer(dataDir, new ManualTicker()));
        channel = TestServers.channel(server);
        unreadChannel = fill(server, channel);
        stallingServer = FencerServer.start(TestServers.singlePeer(stallingDataDir, new ManualTicker())
                .withPortLimits(PortLimits.DEFAULT.withBackupStallTimeout(STALL_TIMEOUT)));
        stallingChannel = TestServers.channel(stallingServer);
        stallingUnreadChannel = fill(stallingServer, stallingChannel);
    }

    /** Gives the server a lock state and a store of several MiB each; returns a channel that reads little. */
    private static ManagedChannel fill(FencerServer server, ManagedChannel channel) throws Exception {
        TestServers.awaitServing(server, channel);
        holdLongNamedLocks(channel); // a lock state of several MiB
        FencingToken writer = acquire(TestServers.stub(channel), openSession(TestServers.stub(channel), TTL_MILLIS),
                "large", 0).getToken();
        for (int i = 0; i < 6; i++) { // a store of 6 MiB
            StoreTesting.stub(channel).write(WriteRequest.newBuilder().setScope("large")
                    .setSequencer(writer.getSequencer()).addOps(StoreTesting.putOp("k" + i, new byte[1 << 20]))
                    .build());
        }
        return NettyChannelBuilder.forAddress("127.0.0.1", server.port()).usePlaintext()
                .flowControlWindow(WINDOW_BYTES).build();
    }

    @AfterAll
    static void stop() throws Exception {
        TestServers.close(unreadChannel);
        TestServers.close(channel);
        server.close();
        TestServers.close(stallingUnreadChannel);
        TestServers.close(stallingChannel);
        stallingServer.close();
    }

    // Regression: any client could open any number of backups and never read them, each holding its whole file.
    @Test
    void backup_limitOfUnreadBackupsInFlight_nextRefusedNamingTheLimitUntilOneIsCancelled() throws Exception {
        assertThat(readLockBackup(channel)).as("a lock backup larger than one chunk").isGreaterThan(2L << 20);

        assertLimitHeldAndFreedOnCancel("backupsInFlightMax", lockBackups(unreadChannel),
                () -> readLockBackup(channel));
    }

    // Regression: any client could open any number of store backups and never read them, each pinning a snapshot.
    @Test
    void storeBackup_limitOfUnreadBackupsInFlight_nextRefusedNamingTheLimitUntilOneIsCancelled() throws Exception {
        assertThat(readStoreBackup(channel)).as("a store backup larger than one chunk").isGreaterThan(2L << 20);

        assertLimitHeldAndFreedOnCancel("storeBackupsInFlightMax", storeBackups(unreadChannel),
                () -> readStoreBackup(channel));
    }

    // Regression: a client that opened backups and stopped reading them held their places (and each its file or
    // snapshot) for as long as its connection lived; only a cancel freed them, so no other backup could be taken.
    @Test
    void backup_clientStopsReading_serverEndsItAfterTheStallTimeoutFreeingItsPlace() throws Exception {
        List<NeverReading> unread = new ArrayList<>();
        try {
            for (int i = 0; i < BACKUPS_IN_FLIGHT_MAX; i++) {
                unread.add(NeverReading.open(lockBackups(stallingUnreadChannel)));
                unread.add(NeverReading.open(storeBackups(stallingUnreadChannel)));
            }
            long stalledNanos = System.nanoTime();
            // the control: the unread backups hold every place
            assertRefusedNaming(catchThrowableOfType(StatusRuntimeException.class,
                    () -> readLockBackup(stallingChannel)), "backupsInFlightMax");
            assertRefusedNaming(catchThrowableOfType(StatusRuntimeException.class,
                    () -> readStoreBackup(stallingChannel)), "storeBackupsInFlightMax");

            long lockBytes = await().atMost(WAIT_MAX).pollInterval(Duration.ofMillis(100))
                    .ignoreException(StatusRuntimeException.class)
                    .until(() -> readLockBackup(stallingChannel), size -> size > 0);
            long freedNanos = System.nanoTime() - stalledNanos;
            long storeBytes = await().atMost(WAIT_MAX).pollInterval(Duration.ofMillis(100))
                    .ignoreException(StatusRuntimeException.class)
                    .until(() -> readStoreBackup(stallingChannel), size -> size > 0);

            assertThat(lockBytes).as("a lock backup taken, no unread one cancelled").isGreaterThan(2L << 20);
            assertThat(storeBytes).as("a store backup taken, no unread one cancelled").isGreaterThan(2L << 20);
            assertThat(Duration.ofNanos(freedNanos)).as("ended by the stall timeout, not before it")
                    .isGreaterThanOrEqualTo(STALL_TIMEOUT.minusMillis(200));
        } finally {
            unread.forEach(NeverReading::cancel);
        }
    }

    @Test
    void storeBackup_clientReadsSlowlyButSteadily_isNotEnded() throws Exception {
        SlowReader reader = new SlowReader(STALL_TIMEOUT.multipliedBy(6).dividedBy(10));
        StoreGrpc.newStub(stallingUnreadChannel).backup(StoreBackupRequest.getDefaultInstance(), observer(reader));

        assertThat(reader.done.await(WAIT_MAX.toSeconds(), TimeUnit.SECONDS)).as("the backup ended").isTrue();
        assertThat(reader.error).as("the backup's end").isNull();
        assertThat(reader.bytes).as("the whole backup read").isGreaterThan(6L << 20);
        assertThat(Duration.ofNanos(reader.tookNanos)).as("read over more than two stall timeouts, so looked at")
                .isGreaterThan(STALL_TIMEOUT.multipliedBy(2));
    }

    private static void assertRefusedNaming(StatusRuntimeException refused, String limit) {
        assertThat(refused).as("a backup over the limit").isNotNull();
        assertThat(refused.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
        ErrorDetail detail = TestServers.detail(refused);
        assertThat(detail.getReason()).isEqualTo(Reason.REASON_LIMIT_EXCEEDED);
        assertThat(detail.getLimit()).isEqualTo(limit);
        assertThat(detail.getLimitValue()).isEqualTo(BACKUPS_IN_FLIGHT_MAX);
        assertThat(refused.getStatus().getDescription()).contains(limit, "" + BACKUPS_IN_FLIGHT_MAX);
    }

    private static UnreadOpener lockBackups(ManagedChannel unread) {
        return (observer, headers) -> AdminGrpc.newStub(unread).withInterceptors(headers)
                .backup(BackupRequest.getDefaultInstance(), observer(observer));
    }

    private static UnreadOpener storeBackups(ManagedChannel unread) {
        return (observer, headers) -> StoreGrpc.newStub(unread).withInterceptors(headers)
                .backup(StoreBackupRequest.getDefaultInstance(), observer(observer));
    }

    /** Opens backups that are never read up to the limit; the next is refused; one cancelled, the next is taken. */
    private static void assertLimitHeldAndFreedOnCancel(String limit, UnreadOpener open, ReadBackup read)
            throws Exception {
        List<NeverReading> unread = new ArrayList<>();
        try {
            for (int i = 0; i < BACKUPS_IN_FLIGHT_MAX; i++) {
                unread.add(NeverReading.open(open));
            }
            assertRefusedNaming(catchThrowableOfType(StatusRuntimeException.class, read::bytes), limit);
            assertThat(cycleLocks("beside-" + limit)).as("lock calls served while backups are held").isEqualTo(20);

            unread.remove(0).cancel();
            long bytes = await().atMost(WAIT_MAX).ignoreException(StatusRuntimeException.class)
                    .until(read::bytes, size -> size > 0);

            assertThat(bytes).as("a backup taken once one was cancelled").isGreaterThan(2L << 20);
            assertThat(cycleLocks("after-" + limit)).isEqualTo(20);
        } finally {
            unread.forEach(NeverReading::cancel);
        }
    }

    private static long readLockBackup(ManagedChannel channel) {
        Iterator<BackupChunk> chunks = AdminGrpc.newBlockingStub(channel).withDeadlineAfter(30, TimeUnit.SECONDS)
                .backup(BackupRequest.getDefaultInstance());
        long bytes = 0;
        while (chunks.hasNext()) {
            bytes += chunks.next().getData().size();
        }
        return bytes;
    }

    private static long readStoreBackup(ManagedChannel channel) {
        Iterator<StoreBackupChunk> chunks = StoreGrpc.newBlockingStub(channel).withDeadlineAfter(30, TimeUnit.SECONDS)
                .backup(StoreBackupRequest.getDefaultInstance());
        long bytes = 0;
        while (chunks.hasNext()) {
            bytes += chunks.next().getData().size();
        }
        return bytes;
    }

    /** Holds {@link #LONG_NAME_LOCKS} locks of 250-byte names, many acquires in flight at once. */
    private static void holdLongNamedLocks(ManagedChannel channel) throws Exception {
        TestSession session = openSession(TestServers.stub(channel), TTL_MILLIS);
        LocksGrpc.LocksFutureStub futures = LocksGrpc.newFutureStub(channel);
        String padding = "p".repeat(240);
        for (int batch = 0; batch < LONG_NAME_LOCKS; batch += 1_000) {
            List<ListenableFuture<AcquireResponse>> calls = new ArrayList<>();
            for (int i = batch; i < batch + 1_000; i++) {
                calls.add(futures.withDeadlineAfter(60, TimeUnit.SECONDS).acquire(TestServers.acquireRequest(
                        session, padding + String.format("%010d", i), "hold-" + i, 0)));
            }
            for (ListenableFuture<AcquireResponse> call : calls) {
                assertThat(call.get(60, TimeUnit.SECONDS).getAcquired()).isTrue();
            }
        }
    }

    private static int cycleLocks(String lock) { // on the first server
        LocksGrpc.LocksBlockingStub stub = TestServers.stub(channel);
        TestSession session = openSession(stub, TTL_MILLIS);
        int completed = 0;
        for (int i = 0; i < 20; i++) {
            AcquireResponse granted = acquire(stub, session, lock, 0);
            assertThat(granted.getAcquired()).isTrue();
            release(stub, session, granted.getToken());
            completed++;
        }
        return completed;
    }

    @SuppressWarnings("unchecked")
    private static <T> ClientResponseObserver<Object, T> observer(ClientResponseObserver<Object, Object> observer) {
        return (ClientResponseObserver<Object, T>) (ClientResponseObserver<?, ?>) observer;
    }

    private interface UnreadOpener {
        void open(NeverReading observer, ClientInterceptor headers);
    }

    private interface ReadBackup {
        long bytes();
    }

    /**
     * A backup call that reads nothing: gRPC asks its transport for no message, so the window it grants the server
     * is never returned. Opened once the server has sent its headers, which it does with the first chunk: the
     * backup is then taken and in flight.
     */
    private static final class NeverReading implements ClientResponseObserver<Object, Object> {
        private final CountDownLatch headers = new CountDownLatch(1);
        private volatile ClientCallStreamObserver<Object> call;
        private volatile Throwable error;

        static NeverReading open(UnreadOpener opener) throws InterruptedException {
            NeverReading observer = new NeverReading();
            opener.open(observer, observer.headersSeen());
            assertThat(observer.headers.await(WAIT_MAX.toSeconds(), TimeUnit.SECONDS))
                    .as("the server started sending the backup; error: %s", observer.error).isTrue();
            return observer;
        }

        void cancel() {
            call.cancel("the test is done with it", null);
        }

        @Override
        public void beforeStart(ClientCallStreamObserver<Object> requestStream) {
            call = requestStream;
            requestStream.disableAutoRequestWithInitial(0);
        }

        @Override
        public void onNext(Object value) {}

        @Override
        public void onError(Throwable failure) {
            error = failure;
            headers.countDown();
        }

        @Override
        public void onCompleted() {
            error = new IllegalStateException("the backup completed unread");
            headers.countDown();
        }

        private ClientInterceptor headersSeen() {
            return new ClientInterceptor() {
                @Override
                public <ReqT, RespT> ClientCall<ReqT, RespT> interceptCall(MethodDescriptor<ReqT, RespT> method,
                        CallOptions options, Channel next) {
                    return new ForwardingClientCall.SimpleForwardingClientCall<>(next.newCall(method, options)) {
                        @Override
                        public void start(Listener<RespT> listener, Metadata requestHeaders) {
                            super.start(new ForwardingClientCallListener.SimpleForwardingClientCallListener<>(
                                    listener) {
                                @Override
                                public void onHeaders(Metadata responseHeaders) {
                                    headers.countDown();
                                    super.onHeaders(responseHeaders);
                                }
                            }, requestHeaders);
                        }
                    };
                }
            };
        }
    }

    /** A backup call that asks for one message at a time, a pause after each: a client on a slow link. */
    private static final class SlowReader implements ClientResponseObserver<Object, Object> {
        private final Duration pause;
        private final long startedNanos = System.nanoTime();
        private final CountDownLatch done = new CountDownLatch(1);
        private volatile ClientCallStreamObserver<Object> call;
        private volatile long bytes;
        private volatile long tookNanos;
        private volatile Throwable error;

        SlowReader(Duration pause) {
            this.pause = pause;
        }

        @Override
        public void beforeStart(ClientCallStreamObserver<Object> requestStream) {
            call = requestStream;
            requestStream.disableAutoRequestWithInitial(1);
        }

        @Override
        public void onNext(Object chunk) {
            bytes += ((StoreBackupChunk) chunk).getData().size();
            CompletableFuture.delayedExecutor(pause.toNanos(), TimeUnit.NANOSECONDS).execute(() -> call.request(1));
        }

        @Override
        public void onError(Throwable failure) {
            error = failure;
            end();
        }

        @Override
        public void onCompleted() {
            end();
        }

        private void end() {
            tookNanos = System.nanoTime() - startedNanos;
            done.countDown();
        }
    }
}
