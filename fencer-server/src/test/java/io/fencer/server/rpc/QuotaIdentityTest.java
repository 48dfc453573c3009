package io.fencer.server.rpc;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.Context;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketAddress;
import org.junit.jupiter.api.Test;

/** How quotas name a caller: a certificate's CN, or an anonymous caller by its address (IPv6 by its /64). */
class QuotaIdentityTest {

    @Test
    void address_ipv4AndLoopbacksAsTheyAre_ipv6ByItsSlash64_otherKindsUnknown() throws Exception {
        assertThat(Identities.address(new InetSocketAddress(InetAddress.getByName("10.1.2.3"), 5000)))
                .isEqualTo("10.1.2.3");
        assertThat(Identities.address(new InetSocketAddress(InetAddress.getByName("::1"), 5000)))
                .isEqualTo("0:0:0:0:0:0:0:1");
        assertThat(Identities.address(new InetSocketAddress(InetAddress.getByName("2001:db8:1:2:aaaa:bbbb:cccc:dddd"),
                5000))).as("one host holds its whole /64").isEqualTo("2001:db8:1:2:0:0:0:0/64");
        assertThat(Identities.address(new SocketAddress() { })).isEqualTo(Identities.UNKNOWN_ADDRESS);
        assertThat(Identities.address(null)).isEqualTo(Identities.UNKNOWN_ADDRESS);
    }

    @Test
    void quotaIdentity_ofANamedCallerIsItsIdentity_ofAnAnonymousOneItsAddress() throws Exception {
        Context anonymous = Identities.withAddress(Context.ROOT, "10.1.2.3");
        Context named = Identities.withIdentity(anonymous, "alice");

        assertThat(anonymous.call(Identities::quotaIdentity)).isEqualTo("anonymous@10.1.2.3");
        assertThat(named.call(Identities::quotaIdentity)).isEqualTo("alice");
        assertThat(Context.ROOT.call(Identities::quotaIdentity)).isEqualTo("anonymous@unknown");
    }
}
