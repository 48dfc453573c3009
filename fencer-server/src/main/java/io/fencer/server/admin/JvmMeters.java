package io.fencer.server.admin;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.jvm.ClassLoaderMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmInfoMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;

/**
 * The Java runtime's meters on a server's registry: its version ({@code jvm_info}), memory, garbage collection,
 * threads, classes, CPU and uptime. Why: the runtime moves this server's speed more than most settings do (with
 * three peers JDK 25 still grants a contended lock about a fifth faster than JDK 17, see docs/performance.md), so an
 * operator comparing two peers or two deployments must see which runtime each one runs, what its collector costs
 * and how many threads it starts.
 */
public final class JvmMeters implements AutoCloseable {
    private final JvmGcMetrics gc;

    private JvmMeters(JvmGcMetrics gc) {
        this.gc = gc;
    }

    /** Binds the runtime's meters to {@code registry}; closing the result stops listening for collections. */
    public static JvmMeters bind(MeterRegistry registry) {
        new JvmInfoMetrics().bindTo(registry);
        new JvmMemoryMetrics().bindTo(registry);
        new JvmThreadMetrics().bindTo(registry);
        new ClassLoaderMetrics().bindTo(registry);
        new ProcessorMetrics().bindTo(registry);
        new UptimeMetrics().bindTo(registry);
        JvmGcMetrics gc = new JvmGcMetrics();
        gc.bindTo(registry);
        return new JvmMeters(gc);
    }

    /** Stops listening for the collector's notifications. */
    @Override
    public void close() {
        gc.close();
    }
}
