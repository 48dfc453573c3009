package io.fencer.server;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.Reason;
import io.fencer.api.v1.WriteResponse;
import io.fencer.core.FencingToken;
import io.fencer.core.Sequencer;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The standalone store server's HTTP port: the Store methods in the Connect protocol, and no Locks methods. */
class HttpStoreServerTest {
    @TempDir
    Path dataDir;

    private static String write(long token, String value) {
        return "{\"scope\": \"orders\", \"sequencer\": \"" + Sequencer.format(new FencingToken("orders", token))
                + "\", \"ops\": [{\"put\": {\"key\": \"aw==\", \"value\": \"" + value + "\"}}]}";
    }

    @Test
    void storeServer_httpPort_servesStoreCallsAndRefusesStaleTokens() throws Exception {
        try (FencerStoreServer server = FencerStoreServer.start(StoreServerConfig.defaults(dataDir)
                .withPorts(0, -1).withHttpPort(0))) {
            ConnectCalls http = new ConnectCalls(server.httpPort());
            WriteResponse written = ConnectCalls.parseJson(http.json("Store/Write", write(12, "bmV3")),
                    WriteResponse.getDefaultInstance());
            assertThat(written.getAccepted()).isEqualTo(12);

            ConnectCalls.Reply stale = http.json("Store/Write", write(11, "b2xk"));
            assertThat(stale.status()).isEqualTo(400);
            assertThat(stale.errorCode()).isEqualTo("failed_precondition");
            ErrorDetail detail = stale.detail();
            assertThat(detail.getReason()).isEqualTo(Reason.REASON_STALE_TOKEN);
            assertThat(detail.getCurrentToken()).isEqualTo(12);

            ConnectCalls.Reply locks = http.json("Locks/OpenSession", "{\"ttlMillis\": 60000}");
            assertThat(locks.status()).as("a store server hosts no lock service").isEqualTo(404);
            assertThat(locks.errorCode()).isEqualTo("unimplemented");
        }
    }

    @Test
    void storeServer_withoutHttpPort_bindsNone() throws Exception {
        try (FencerStoreServer server = FencerStoreServer.start(StoreServerConfig.defaults(dataDir)
                .withPorts(0, -1))) {
            assertThat(server.httpPort()).isEqualTo(-1);
        }
    }
}
