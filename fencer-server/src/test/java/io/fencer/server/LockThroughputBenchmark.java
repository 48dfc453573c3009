package io.fencer.server;

import com.sun.management.OperatingSystemMXBean;
import io.fencer.api.v1.AcquireRequest;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.OpenSessionRequest;
import io.fencer.api.v1.OpenSessionResponse;
import io.fencer.api.v1.ReleaseRequest;
import io.fencer.api.v1.ReleaseResponse;
import io.fencer.core.Ticker;
import io.grpc.ManagedChannel;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.stub.StreamObserver;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import java.util.function.LongSupplier;

/**
 * A throwaway measurement, not a test: one server with fsync on, N concurrent async callers each cycling
 * acquire + release on its own lock through real gRPC. Prints cycles/s and the cycle latency percentiles.
 *
 * <p>Run: {@code java -cp <test classpath> io.fencer.server.LockThroughputBenchmark [clients] [seconds]
 * [host:port]}; with host:port it is a client only, against a server in another process. The test classpath:
 * {@code mvn -o -q -pl fencer-server dependency:build-classpath -Dmdep.outputFile=cp.txt -Dmdep.includeScope=test}
 * plus {@code target/classes:target/test-classes}.
 */
public final class LockThroughputBenchmark {
    private LockThroughputBenchmark() {}

    public static void main(String[] args) throws Exception {
        int clients = args.length > 0 ? Integer.parseInt(args[0]) : 64;
        int seconds = args.length > 1 ? Integer.parseInt(args[1]) : 20;
        if (args.length > 2) { // a client only, against a server in another process: host:port
            String[] address = args[2].split(":");
            ManagedChannel channel = NettyChannelBuilder
                    .forAddress(address[0], Integer.parseInt(address[1])).usePlaintext().directExecutor().build();
            run(channel, clients, seconds, () -> 0L);
            TestServers.close(channel);
            return;
        }
        Path dataDir = Files.createTempDirectory("fencer-bench");
        try (FencerServer server = FencerServer.start(ServerConfig.defaults(dataDir).withPorts(0, -1, 0)
                .withTicker(Ticker.system()))) {
            ManagedChannel channel = NettyChannelBuilder
                    .forAddress("127.0.0.1", server.port()).usePlaintext().directExecutor().build();
            TestServers.awaitServing(server, channel);
            run(channel, clients, seconds, server::appliedIndex);
            TestServers.close(channel);
        }
    }

    /** Opens a session per client, warms up for 10 s, then measures; entries are counted when in process. */
    private static void run(ManagedChannel channel, int clients, int seconds, LongSupplier appliedIndex)
            throws Exception {
        LocksGrpc.LocksBlockingStub blocking = TestServers.stub(channel);
        LocksGrpc.LocksStub async = LocksGrpc.newStub(channel);
        List<Client> all = new ArrayList<>();
        for (int i = 0; i < clients; i++) {
            OpenSessionResponse opened = blocking.openSession(OpenSessionRequest.newBuilder().setTtlMillis(600_000)
                    .build());
            all.add(new Client(async, opened.getSessionId(), opened.getSecret(), "bench-" + i));
        }
        measure(all, 10, "warm-up");
        long entriesBefore = appliedIndex.getAsLong();
        OperatingSystemMXBean os = (OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        long cpuBefore = os.getProcessCpuTime();
        long cycles = measure(all, seconds, "measured");
        long cpuNanos = os.getProcessCpuTime() - cpuBefore;
        long entries = appliedIndex.getAsLong() - entriesBefore;
        System.out.printf("log entries: %d, %.1f commands per entry; process cpu %.1f s, %.0f us per cycle%n",
                entries, 2.0 * cycles / Math.max(1, entries), cpuNanos / 1e9, cpuNanos / 1e3 / cycles);
    }

    private static long measure(List<Client> clients, int seconds, String label) throws InterruptedException {
        long endNanos = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        CountDownLatch done = new CountDownLatch(clients.size());
        long startNanos = System.nanoTime();
        clients.forEach(client -> client.run(endNanos, done));
        done.await();
        double elapsedSeconds = (System.nanoTime() - startNanos) / 1e9;
        long cycles = 0;
        List<Long> latencies = new ArrayList<>();
        for (Client client : clients) {
            cycles += client.cycles.get();
            latencies.addAll(client.takeLatencies());
        }
        long[] sorted = latencies.stream().mapToLong(Long::longValue).toArray();
        Arrays.sort(sorted);
        System.out.printf("%s: %d clients, %.1f s, %d cycles, %.0f cycles/s, p50 %.2f ms, p99 %.2f ms, "
                + "max %.2f ms, errors %d%n", label, clients.size(), elapsedSeconds, cycles, cycles / elapsedSeconds,
                percentile(sorted, 0.50), percentile(sorted, 0.99), percentile(sorted, 1.0),
                clients.stream().mapToLong(client -> client.errors.get()).sum());
        return cycles;
    }

    private static double percentile(long[] sorted, double quantile) {
        if (sorted.length == 0) {
            return 0;
        }
        int index = (int) Math.min(sorted.length - 1, Math.ceil(quantile * sorted.length) - 1);
        return sorted[Math.max(0, index)] / 1e6;
    }

    /** One caller: acquire, release, again, until the end; each cycle's latency is recorded. */
    private static final class Client {
        private final LocksGrpc.LocksStub stub;
        private final long session;
        private final String secret;
        private final String lock;
        private final AtomicLong cycles = new AtomicLong();
        private final AtomicLong errors = new AtomicLong();
        private final List<Long> latencies = new ArrayList<>(); // guarded by this
        private long requestNumber;

        Client(LocksGrpc.LocksStub stub, long session, String secret, String lock) {
            this.stub = stub;
            this.session = session;
            this.secret = secret;
            this.lock = lock;
        }

        synchronized List<Long> takeLatencies() {
            List<Long> taken = new ArrayList<>(latencies);
            latencies.clear();
            cycles.set(0);
            errors.set(0);
            return taken;
        }

        void run(long endNanos, CountDownLatch done) {
            if (System.nanoTime() - endNanos >= 0) {
                done.countDown();
                return;
            }
            long startNanos = System.nanoTime();
            AcquireRequest request = AcquireRequest.newBuilder().setSessionId(session).setSessionSecret(secret)
                    .setLock(lock).setRequestId("r" + requestNumber++).build();
            stub.acquire(request, new Answer<>(done, endNanos, response -> {
                if (!response.getAcquired()) {
                    errors.incrementAndGet();
                    run(endNanos, done);
                    return;
                }
                stub.release(ReleaseRequest.newBuilder().setToken(response.getToken()).setSessionId(session)
                        .setSessionSecret(secret).build(),
                        new Answer<ReleaseResponse>(done, endNanos, released -> {
                            synchronized (this) {
                                latencies.add(System.nanoTime() - startNanos);
                            }
                            cycles.incrementAndGet();
                            run(endNanos, done);
                        }));
            }));
        }

        /** Continues the loop on success; counts and continues on errors. */
        private final class Answer<T> implements StreamObserver<T> {
            private final CountDownLatch done;
            private final long endNanos;
            private final Consumer<T> next;

            Answer(CountDownLatch done, long endNanos, Consumer<T> next) {
                this.done = done;
                this.endNanos = endNanos;
                this.next = next;
            }

            @Override
            public void onNext(T value) {
                next.accept(value);
            }

            @Override
            public void onError(Throwable error) {
                errors.incrementAndGet();
                run(endNanos, done);
            }

            @Override
            public void onCompleted() {}
        }
    }
}
