package io.fencer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Properties;
import org.junit.jupiter.api.Test;

/** The distribution's defaults for gRPC's Netty: set when absent, never over what the user set with -D. */
class NettyDefaultsTest {
    private static final String LEAK_DETECTION = "io.grpc.netty.shaded.io.netty.leakDetection.level";
    private static final String RECYCLER = "io.grpc.netty.shaded.io.netty.recycler.maxCapacityPerThread";
    private static final String JFR = "io.grpc.netty.shaded.io.netty.jfr.enabled";

    @Test
    void configureNetty_propertiesUnset_disablesLeakDetectionTheRecyclerAndFlightRecorderEvents() {
        Properties properties = new Properties();

        Main.configureNetty(properties);

        assertThat(properties.getProperty(LEAK_DETECTION)).isEqualTo("disabled");
        assertThat(properties.getProperty(RECYCLER)).isEqualTo("0");
        assertThat(properties.getProperty(JFR)).isEqualTo("false");
        assertThat(properties).hasSameSizeAs(Main.NETTY_DEFAULTS);
    }

    @Test
    void configureNetty_propertySetByTheUser_keepsTheUsersValue() {
        Properties properties = new Properties();
        properties.setProperty(LEAK_DETECTION, "paranoid");

        Main.configureNetty(properties);

        assertThat(properties.getProperty(LEAK_DETECTION)).isEqualTo("paranoid");
        assertThat(properties.getProperty(RECYCLER)).isEqualTo("0");
    }
}
