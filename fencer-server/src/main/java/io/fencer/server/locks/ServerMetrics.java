package io.fencer.server.locks;

import io.fencer.lock.EndCause;
import io.fencer.lock.Event;
import io.fencer.server.raft.AppliedListener;
import io.fencer.server.raft.RaftLockStateMachine;
import io.grpc.ForwardingServerCall;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * The server's Prometheus metrics: counters of grants, releases and session expiries (from applied events),
 * gauges of the state's size and of leadership, the latency of every unary call by method
 * ({@code fencer_request_seconds}). The server binds the Java runtime's meters to the same registry
 * ({@code admin.JvmMeters}), as the standalone store server does to its own.
 */
public final class ServerMetrics implements AppliedListener, ServerInterceptor {
    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final Counter grants;
    private final Counter releases;
    private final Counter sessionExpiries;
    private final Counter revocations;
    /**
     * The timer of each method, keyed by its descriptor (one object per method, hashed by identity): looking it up
     * by name would compute the bare method name on every call.
     */
    private final Map<MethodDescriptor<?, ?>, Timer> requestTimers = new ConcurrentHashMap<>();

    public ServerMetrics(Supplier<RaftLockStateMachine.Counts> counts, Supplier<Integer> waitingCalls,
            BooleanSupplier isLeader) {
        grants = Counter.builder("fencer.grants").description("Locks granted").register(registry);
        releases = Counter.builder("fencer.releases").description("Locks released by their holder")
                .register(registry);
        revocations = Counter.builder("fencer.revocations").description("Grants revoked by an operator")
                .register(registry);
        sessionExpiries = Counter.builder("fencer.session.expiries").description("Sessions expired by the leader")
                .register(registry);
        Gauge.builder("fencer.sessions", () -> counts.get().sessions()).description("Open sessions")
                .register(registry);
        Gauge.builder("fencer.locks", () -> counts.get().locks()).description("Lock records").register(registry);
        Gauge.builder("fencer.waiters", () -> counts.get().waiters()).description("Sessions queued on locks")
                .register(registry);
        Gauge.builder("fencer.waiting.calls", waitingCalls::get).description("Acquire calls waiting on this peer")
                .register(registry);
        Gauge.builder("fencer.is.leader", () -> isLeader.getAsBoolean() ? 1 : 0)
                .description("1 while this peer is the leader").register(registry);
    }

    @Override
    public void onApplied(List<Event> events) {
        for (Event event : events) {
            if (event instanceof Event.Granted) {
                grants.increment();
            } else if (event instanceof Event.GrantEnded ended && ended.cause() == EndCause.RELEASED) {
                releases.increment();
            } else if (event instanceof Event.Revoked) {
                revocations.increment();
            } else if (event instanceof Event.SessionEnded ended && ended.cause() == EndCause.SESSION_EXPIRED) {
                sessionExpiries.increment();
            }
        }
    }

    /** Returns the registry, for the metrics of roles hosted beside the lock service. */
    public MeterRegistry registry() {
        return registry;
    }

    /** Returns the metrics in the Prometheus text format. */
    public String scrape() {
        return registry.scrape();
    }

    @Override
    public <RequestT, ResponseT> ServerCall.Listener<RequestT> interceptCall(ServerCall<RequestT, ResponseT> call,
            Metadata headers, ServerCallHandler<RequestT, ResponseT> next) {
        if (call.getMethodDescriptor().getType() != MethodDescriptor.MethodType.UNARY) {
            return next.startCall(call, headers);
        }
        MethodDescriptor<RequestT, ResponseT> method = call.getMethodDescriptor();
        long startNanos = System.nanoTime();
        return next.startCall(new ForwardingServerCall.SimpleForwardingServerCall<>(call) {
            @Override
            public void close(Status status, Metadata trailers) {
                recordRequest(method, System.nanoTime() - startNanos);
                super.close(status, trailers);
            }
        }, headers);
    }

    /** Records one call of {@code method}, unary or carried on a pipeline stream, from arrival to answer. */
    public void recordRequest(MethodDescriptor<?, ?> method, long nanos) {
        Timer known = requestTimers.get(method);
        Timer timer = known != null ? known : requestTimers.computeIfAbsent(method, this::newRequestTimer);
        timer.record(nanos, TimeUnit.NANOSECONDS);
    }

    /** Returns the timer of {@code method}'s unary calls; the registry hands out one per method name. */
    private Timer newRequestTimer(MethodDescriptor<?, ?> method) {
        return Timer.builder("fencer.request").description("Calls (unary or pipelined), from arrival to answer")
                .tag("method", method.getBareMethodName())
                // Buckets, not client-side percentiles: cheaper per call, and aggregatable across peers
                // (histogram_quantile gives p50/p99).
                .publishPercentileHistogram()
                .register(registry);
    }

    /** Closes the registry. */
    public void close() {
        registry.close();
    }
}
