package io.fencer.server.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.ByteString;
import io.fencer.api.errors.WireErrors;
import io.fencer.api.v1.BeginUnitRequest;
import io.fencer.api.v1.CommitUnitRequest;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.GetRequest;
import io.fencer.api.v1.Op;
import io.fencer.api.v1.Put;
import io.fencer.api.v1.Reason;
import io.fencer.api.v1.StoreGrpc;
import io.fencer.api.v1.UnitWriteRequest;
import io.fencer.api.v1.UnitWriteResponse;
import io.fencer.core.FencingToken;
import io.fencer.core.ManualTicker;
import io.fencer.core.Sequencer;
import io.fencer.server.auth.Authorizer;
import io.fencer.store.StoreOptions;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.stub.StreamObserver;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The server-wide bound on the bytes of the requests the store's workers hold ({@code requestBytesQueuedMax}): the
 * count of calls waiting for a worker (4,096) would let UnitWrites of 5 MiB hold 20 GiB. A single node's store behind
 * real gRPC (in-process), its workers all held in the store's call guard by Gets, with a bound of 1 MiB: UnitWrites of
 * 256 KiB queue behind them, three fit and a fourth does not.
 */
class StoreRequestBytesTest {
    private static final long BOUND_BYTES = 1L << 20;
    private static final int VALUE_BYTES = 256 * 1024;
    private static final int WRITES = 8;
    private static final Duration WAIT_MAX = Duration.ofSeconds(30);

    @TempDir
    Path dataDir;
    private final AtomicBoolean holding = new AtomicBoolean();
    private final CountDownLatch release = new CountDownLatch(1);
    private final AtomicInteger held = new AtomicInteger();
    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    private StoreRole role;
    private Server server;
    private ManagedChannel channel;

    @BeforeEach
    void start() throws Exception {
        role = StoreRole.open(dataDir, StoreOptions.defaults().withTicker(new ManualTicker())
                .withRequestBytesQueuedMax(BOUND_BYTES), registry, Authorizer.allowingEveryone(),
                null, RefusalListener.NONE, Duration.ofMinutes(1), this::holdWhileAsked);
        String name = InProcessServerBuilder.generateName();
        server = InProcessServerBuilder.forName(name).addService(role.service()).build().start();
        channel = InProcessChannelBuilder.forName(name).build();
    }

    @AfterEach
    void stop() throws Exception {
        release.countDown();
        channel.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
        server.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
        role.close();
    }

    /** The store's call guard: while {@link #holding}, a call that passes it waits for {@link #release}. */
    private void holdWhileAsked() {
        if (!holding.get()) {
            return;
        }
        held.incrementAndGet();
        try {
            release.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Test
    void unitWrite_queuedPastTheBound_isRefusedNamingItAndThoseTakenAllCommit() {
        String unit = begin();
        holdEveryWorker();

        List<UnitWriteRequest> requests = new ArrayList<>();
        List<CompletableFuture<UnitWriteResponse>> outcomes = new ArrayList<>();
        for (int i = 0; i < WRITES; i++) {
            requests.add(write(unit, "k" + i, VALUE_BYTES));
            outcomes.add(send(requests.get(i)));
        }
        await().atMost(WAIT_MAX).until(() -> failed(outcomes).size() + role.callsWaiting() == WRITES);

        long takenBytes = 0;
        int taken = 0;
        for (int i = 0; i < WRITES; i++) {
            if (!outcomes.get(i).isDone()) {
                takenBytes += requests.get(i).getSerializedSize();
                taken++;
            }
        }
        assertThat(takenBytes).as("bytes of UnitWrites taken while every worker is busy").isLessThanOrEqualTo(
                BOUND_BYTES);
        assertThat(taken).as("three of 256 KiB fit 1 MiB beside the Gets").isEqualTo(3);
        for (Throwable refusal : failed(outcomes)) {
            assertRefusedForTheBound(refusal);
        }

        release.countDown();
        await().atMost(WAIT_MAX).until(() -> outcomes.stream().allMatch(CompletableFuture::isDone));
        assertThat(outcomes.stream().filter(outcome -> !outcome.isCompletedExceptionally()).count())
                .as("every write taken was served").isEqualTo(taken);
        assertThat(store().commitUnit(CommitUnitRequest.newBuilder().setUnitId(unit).build()).getOpsApplied())
                .as("nothing taken was lost").isEqualTo(taken);
        // a call's bytes come back just after its answer is sent
        await().atMost(WAIT_MAX).untilAsserted(() -> assertThat(role.storeService().requestBytesHeld())
                .as("every request's bytes came back").isZero());
    }

    @Test
    void metrics_requestsHeldByTheWorkers_showTheirBytesUntilServed() {
        String unit = begin();
        holdEveryWorker();
        UnitWriteRequest request = write(unit, "k", VALUE_BYTES);
        CompletableFuture<UnitWriteResponse> outcome = send(request);
        await().atMost(WAIT_MAX).until(() -> role.callsWaiting() == 1);

        assertThat(requestBytesGauge()).as("the Gets held and the write waiting")
                .isEqualTo(role.storeService().requestBytesHeld())
                .isGreaterThanOrEqualTo(request.getSerializedSize());
        release.countDown();
        assertThat(outcome.join().getOpsBuffered()).isEqualTo(1);
        await().atMost(WAIT_MAX).untilAsserted(() -> assertThat(requestBytesGauge()).isZero());
    }

    private long requestBytesGauge() {
        return (long) registry.get("fencer.store.requests.queued").gauge().value();
    }

    @Test
    void unitWrite_aloneAndLargerThanTheBound_isTaken() {
        String unit = begin();
        UnitWriteRequest large = write(unit, "k", (int) BOUND_BYTES).toBuilder()
                .addOps(put("k2", VALUE_BYTES)).build();
        assertThat(large.getSerializedSize()).as("the control: above the bound").isGreaterThan((int) BOUND_BYTES);

        assertThat(store().unitWrite(large).getOpsBuffered()).isEqualTo(2);
    }

    /** Holds all of the store's workers in its call guard, with Gets, until {@link #release}. */
    private void holdEveryWorker() {
        holding.set(true);
        for (int i = 0; i < StoreRole.WORKERS; i++) {
            StoreGrpc.newStub(channel).get(GetRequest.newBuilder().setScope("jobs")
                    .setKey(ByteString.copyFromUtf8("k")).build(), new Outcome<>());
        }
        await().atMost(WAIT_MAX).until(() -> held.get() == StoreRole.WORKERS && role.callsWaiting() == 0);
    }

    private static void assertRefusedForTheBound(Throwable refusal) {
        assertThat(refusal).isInstanceOf(StatusRuntimeException.class);
        assertThat(((StatusRuntimeException) refusal).getStatus().getCode())
                .isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
        ErrorDetail detail = WireErrors.detail(refusal).orElseThrow();
        assertThat(detail.getReason()).isEqualTo(Reason.REASON_LIMIT_EXCEEDED);
        assertThat(detail.getLimit()).isEqualTo("requestBytesQueuedMax");
        assertThat(detail.getLimitValue()).isEqualTo(BOUND_BYTES);
        assertThat(detail.getMessage()).contains("requestBytesQueuedMax of " + BOUND_BYTES,
                "--request-bytes-queued-max");
    }

    private static List<Throwable> failed(List<CompletableFuture<UnitWriteResponse>> outcomes) {
        List<Throwable> failures = new ArrayList<>();
        for (CompletableFuture<UnitWriteResponse> outcome : outcomes) {
            if (outcome.isCompletedExceptionally()) {
                failures.add(outcome.handle((ops, failure) -> failure).join());
            }
        }
        return failures;
    }

    private String begin() {
        return store().beginUnit(BeginUnitRequest.newBuilder().setScope("jobs")
                .setSequencer(Sequencer.format(new FencingToken("jobs", 3))).setTimeoutMillis(60_000).build())
                .getUnitId();
    }

    private static UnitWriteRequest write(String unit, String key, int valueBytes) {
        return UnitWriteRequest.newBuilder().setUnitId(unit).addOps(put(key, valueBytes)).build();
    }

    private static Op put(String key, int valueBytes) {
        return Op.newBuilder().setPut(Put.newBuilder().setKey(ByteString.copyFromUtf8(key))
                .setValue(ByteString.copyFrom(new byte[valueBytes]))).build();
    }

    /** Sends {@code request}; the future completes with its answer, or the call's failure. */
    private CompletableFuture<UnitWriteResponse> send(UnitWriteRequest request) {
        Outcome<UnitWriteResponse> outcome = new Outcome<>();
        StoreGrpc.newStub(channel).unitWrite(request, outcome);
        return outcome.result;
    }

    private StoreGrpc.StoreBlockingStub store() {
        return StoreGrpc.newBlockingStub(channel).withDeadlineAfter(WAIT_MAX.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** A unary call's outcome. */
    private static final class Outcome<T> implements StreamObserver<T> {
        final CompletableFuture<T> result = new CompletableFuture<>();

        @Override
        public void onNext(T value) {
            result.complete(value);
        }

        @Override
        public void onError(Throwable error) {
            result.completeExceptionally(error);
        }

        @Override
        public void onCompleted() {
            // the answer came with onNext
        }
    }
}
