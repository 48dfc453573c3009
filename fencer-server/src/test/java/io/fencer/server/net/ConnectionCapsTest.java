package io.fencer.server.net;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** The counting behind every port's connection caps: per address, in total, and what is counted of refusals. */
class ConnectionCapsTest {
    private final SimpleMeterRegistry registry = new SimpleMeterRegistry();
    private final AtomicLong nanos = new AtomicLong();
    private final InetAddress one = address("10.0.0.1");
    private final InetAddress two = address("10.0.0.2");

    private static InetAddress address(String text) {
        return new InetSocketAddress(text, 0).getAddress();
    }

    private ConnectionCaps caps(int connectionsMax, int perAddressMax) {
        return new ConnectionCaps("test", "test", connectionsMax, perAddressMax, true, registry, nanos::get);
    }

    private double refused(String cap) {
        return registry.get("fencer.connections.refused").tag("port", "test").tag("cap", cap).counter().count();
    }

    @Test
    void tryOpen_pastThePerAddressCap_refusesThatAddressOnlyUntilOneCloses() {
        ConnectionCaps caps = caps(10, 2);

        boolean first = caps.tryOpen(one);
        boolean second = caps.tryOpen(one);
        boolean third = caps.tryOpen(one);
        boolean otherAddress = caps.tryOpen(two);
        caps.closed(one);
        boolean afterClose = caps.tryOpen(one);

        assertThat(first).isTrue();
        assertThat(second).isTrue();
        assertThat(third).isFalse();
        assertThat(otherAddress).isTrue();
        assertThat(afterClose).isTrue();
        assertThat(caps.open(one)).isEqualTo(2);
        assertThat(caps.open()).isEqualTo(3);
        assertThat(refused("per_address")).isEqualTo(1);
        assertThat(refused("total")).isZero();
    }

    @Test
    void tryOpen_atTheTotalCap_refusesEveryAddress() {
        ConnectionCaps caps = caps(3, 2);
        caps.tryOpen(one);
        caps.tryOpen(one);
        caps.tryOpen(two);

        boolean fourth = caps.tryOpen(address("10.0.0.3"));
        boolean withoutAddress = caps.tryOpen(null);

        assertThat(fourth).isFalse();
        assertThat(withoutAddress).as("counted in the total only, so refused too").isFalse();
        assertThat(refused("total")).isEqualTo(2);
        assertThat(registry.get("fencer.connections.open").tag("port", "test").gauge().value()).isEqualTo(3);
    }

    @Test
    void closed_everyConnection_forgetsTheAddress() {
        ConnectionCaps caps = caps(10, 2);
        caps.tryOpen(one);
        caps.closed(one);
        caps.closed(one); // a second close (a connection closed twice) never goes below zero

        assertThat(caps.open(one)).isZero();
        assertThat(caps.open()).isZero();
    }

    @Test
    void timedOut_knownPhase_isCountedAndUnknownPhaseOrPortWithoutTimeoutsIsAnError() {
        ConnectionCaps caps = caps(10, 2);

        caps.timedOut(new InetSocketAddress(one, 1234), "headers", "headerReadTimeout", Duration.ofSeconds(5));
        caps.timedOut(new InetSocketAddress(one, 1235), "headers", "headerReadTimeout", Duration.ofSeconds(5));

        assertThat(registry.get("fencer.connections.timed.out").tag("port", "test").tag("phase", "headers")
                .counter().count()).isEqualTo(2);
        assertThatThrownBy(() -> caps.timedOut(null, "lunch", "x", Duration.ofSeconds(1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("lunch");
        ConnectionCaps grpc = new ConnectionCaps("grpc", "grpc", 10, 2, false, registry, nanos::get);
        assertThat(registry.find("fencer.connections.timed.out").tag("port", "grpc").counters())
                .as("a port that reports no timeouts shows no such counters").isEmpty();
        assertThatThrownBy(() -> grpc.timedOut(null, "headers", "x", Duration.ofSeconds(1)))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void constructor_perAddressAboveTheTotal_isRefusedNamingBoth() {
        assertThatThrownBy(() -> caps(2, 3)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("connectionsMax 2").hasMessageContaining("perAddressMax 3");
    }
}
