package io.fencer.spring;

/**
 * Where the Spring integrations report what an operator watches: acquires, lease losses and stale refusals. The
 * auto-configuration records them as Micrometer meters when a {@code MeterRegistry} exists; {@link #NONE} records
 * nothing.
 *
 * <p>Meters (component is {@code shedlock} or {@code lock-registry}):
 * <ul>
 *   <li>{@code fencer.acquires}, tags {@code component} and {@code outcome} ({@code acquired}, {@code busy},
 *       {@code timed-out}, {@code failed}): attempts to take a lock;
 *   <li>{@code fencer.lease.losses}, tag {@code component}: locks whose session was lost while held;
 *   <li>{@code fencer.stale.refusals}: tokens the JDBC fence refused (the transaction was rolled back).
 * </ul>
 */
public interface FencerMetrics {
    /** Records nothing. */
    FencerMetrics NONE = new FencerMetrics() {};

    /** The component that took or held a lock, as the {@code component} tag names it. */
    enum Component {
        SHEDLOCK("shedlock"), LOCK_REGISTRY("lock-registry");

        private final String tag;

        Component(String tag) {
            this.tag = tag;
        }

        public String tag() {
            return tag;
        }
    }

    /** How an attempt to take a lock ended, as the {@code outcome} tag names it. */
    enum Outcome {
        ACQUIRED("acquired"), BUSY("busy"), TIMED_OUT("timed-out"), FAILED("failed");

        private final String tag;

        Outcome(String tag) {
            this.tag = tag;
        }

        public String tag() {
            return tag;
        }
    }

    /** Records one attempt to take a lock. */
    default void acquire(Component component, Outcome outcome) {}

    /** Records a lock whose session was lost (expired, unreachable) while it was held. */
    default void leaseLost(Component component) {}

    /** Records a token the JDBC fence refused. */
    default void staleRefused() {}
}
