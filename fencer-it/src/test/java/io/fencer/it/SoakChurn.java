package io.fencer.it;

import io.fencer.api.v1.AcquireRequest;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.OpenSessionRequest;
import io.fencer.api.v1.OpenSessionResponse;
import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.Session;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The soak's load: client threads that open sessions, acquire and release locks of a small set, and then close their
 * sessions or (a share of them, through raw calls that never keep alive) leave them to expire, paced to open
 * {@code sessionsTotal} sessions over the run. It counts what it did and keeps each interval's acquire latencies.
 */
final class SoakChurn implements AutoCloseable {
    private static final int LOCKS = 16;
    private static final int ORPHAN_LOCKS = 64;
    private static final Duration SESSION_TTL = Duration.ofSeconds(3);
    private static final long ORPHAN_TTL_MILLIS = 2_000;
    /** One session in this many is left to expire instead of being closed. */
    private static final int ABANDON_EVERY = 4;
    private static final Duration ACQUIRE_WAIT = Duration.ofSeconds(20);

    private final List<String> endpoints;
    private final List<Thread> threads = new ArrayList<>();
    private final List<ManagedChannel> channels = new ArrayList<>();
    private final AtomicLong sessionsOpened = new AtomicLong();
    private final AtomicLong sessionsAbandoned = new AtomicLong();
    private final AtomicLong acquires = new AtomicLong();
    private final AtomicLong errors = new AtomicLong();
    private final ConcurrentLinkedQueue<String> errorSamples = new ConcurrentLinkedQueue<>();
    private volatile ConcurrentLinkedQueue<Long> latenciesNanos = new ConcurrentLinkedQueue<>();
    private volatile boolean stopping;

    SoakChurn(List<String> endpoints) {
        this.endpoints = List.copyOf(endpoints);
    }

    /** Starts {@code threadCount} threads that open {@code sessionsTotal} sessions in all, evenly over {@code run}. */
    void start(int threadCount, int sessionsTotal, Duration run) {
        long perThread = sessionsTotal / threadCount;
        long pauseNanos = run.toNanos() / perThread;
        for (int i = 0; i < threadCount; i++) {
            long seed = i;
            Thread thread = new Thread(() -> churn(seed, perThread, pauseNanos), "soak-churn-" + i);
            thread.setDaemon(true);
            threads.add(thread);
            thread.start();
        }
    }

    private void churn(long seed, long sessions, long pauseNanos) {
        SplittableRandom random = new SplittableRandom(seed);
        long next = System.nanoTime();
        try (FencerClient fencer = Fencer.newBuilder().endpoints(endpoints.toArray(String[]::new))
                .callTimeout(Duration.ofSeconds(30)).build()) {
            for (long n = 0; n < sessions && !stopping; n++) {
                try {
                    if (n % ABANDON_EVERY == ABANDON_EVERY - 1) {
                        abandon(random);
                    } else {
                        cycle(fencer, random);
                    }
                } catch (RuntimeException e) {
                    errors.incrementAndGet(); // a failover's calls; counted, and the run goes on
                    if (errorSamples.size() < 20) {
                        errorSamples.add(e.toString());
                    }
                }
                next += pauseNanos;
                long sleep = next - System.nanoTime();
                if (sleep > 0) {
                    TimeUnit.NANOSECONDS.sleep(sleep);
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** A session's life: open, two acquires and releases of random locks, close. */
    private void cycle(FencerClient fencer, SplittableRandom random) {
        try (Session session = fencer.openSession(SESSION_TTL)) {
            sessionsOpened.incrementAndGet();
            for (int i = 0; i < 2; i++) {
                long start = System.nanoTime();
                try (Grant grant = session.lock("soak/" + random.nextInt(LOCKS)).acquire(ACQUIRE_WAIT)) {
                    latenciesNanos.add(System.nanoTime() - start);
                    acquires.incrementAndGet();
                }
            }
        }
    }

    /** A session opened and given a lock through raw calls, then never kept alive: it expires on the service. */
    private void abandon(SplittableRandom random) {
        StatusRuntimeException last = null;
        for (String endpoint : endpoints) {
            LocksGrpc.LocksBlockingStub stub = LocksGrpc.newBlockingStub(channel(endpoint))
                    .withDeadlineAfter(10, TimeUnit.SECONDS);
            try {
                OpenSessionResponse session = stub.openSession(OpenSessionRequest.newBuilder()
                        .setTtlMillis(ORPHAN_TTL_MILLIS).build());
                sessionsOpened.incrementAndGet();
                sessionsAbandoned.incrementAndGet();
                stub.acquire(AcquireRequest.newBuilder().setSessionId(session.getSessionId())
                        .setSessionSecret(session.getSecret()).setLock("soak/orphan-" + random.nextInt(ORPHAN_LOCKS))
                        .setRequestId(UUID.randomUUID().toString()).build());
                return;
            } catch (StatusRuntimeException e) {
                last = e; // a follower or a dead peer: the next one
            }
        }
        throw last;
    }

    private synchronized ManagedChannel channel(String endpoint) {
        int index = endpoints.indexOf(endpoint);
        while (channels.size() <= index) {
            String[] hostPort = endpoints.get(channels.size()).split(":");
            channels.add(NettyChannelBuilder.forAddress(hostPort[0], Integer.parseInt(hostPort[1])).usePlaintext()
                    .build());
        }
        return channels.get(index);
    }

    long sessionsOpened() {
        return sessionsOpened.get();
    }

    long sessionsAbandoned() {
        return sessionsAbandoned.get();
    }

    long acquires() {
        return acquires.get();
    }

    long errors() {
        return errors.get();
    }

    List<String> errorSamples() {
        return List.copyOf(errorSamples);
    }

    /** Returns the 99th percentile of the acquires since the last call, in milliseconds (0 without any). */
    double takeP99Millis() {
        ConcurrentLinkedQueue<Long> interval = latenciesNanos;
        latenciesNanos = new ConcurrentLinkedQueue<>();
        long[] sorted = interval.stream().mapToLong(Long::longValue).toArray();
        if (sorted.length == 0) {
            return 0;
        }
        Arrays.sort(sorted);
        return sorted[Math.min(sorted.length - 1, (int) Math.ceil(sorted.length * 0.99) - 1)] / 1e6;
    }

    /** Returns true once every thread opened its share of sessions (or was stopped). */
    boolean finished() {
        return threads.stream().noneMatch(Thread::isAlive);
    }

    @Override
    public void close() throws InterruptedException {
        stopping = true;
        for (Thread thread : threads) {
            thread.join(60_000);
        }
        for (ManagedChannel channel : channels) {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
    }
}
