package io.fencer.server.admin;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.fencer.server.raft.ApplyHalt;
import org.junit.jupiter.api.Test;

/** The JSON bodies of {@code /healthz}: their members, in order, on one line. */
class AdminHttpBodiesTest {

    @Test
    void lockHealth_leaderKnown_pinsTheBody() {
        AdminHttpServer.Health health = AdminHttpServer.lockHealth("n1", "LEADER", "127.0.0.1:7070", Long.MAX_VALUE,
                "RUNNING", null);

        assertThat(health.status()).isEqualTo(200);
        assertThat(health.json()).isEqualTo("{\"status\":\"ok\",\"id\":\"n1\",\"role\":\"LEADER\","
                + "\"leader\":\"127.0.0.1:7070\",\"appliedIndex\":9223372036854775807,\"division\":\"RUNNING\"}\n");
        assertThat(JsonParser.parseString(health.json()).getAsJsonObject().get("appliedIndex").getAsLong())
                .isEqualTo(Long.MAX_VALUE);
    }

    @Test
    void lockHealth_hardPeerIdAndNoLeader_escapesByJsonRulesAndAnswers503() {
        String peerId = "q\"b\\s\u0001\n<&> \u00e9\ud83d\ude00";

        AdminHttpServer.Health health = AdminHttpServer.lockHealth(peerId, "FOLLOWER", "", 0, "RUNNING", null);

        assertThat(health.status()).isEqualTo(503);
        assertThat(health.json()).isEqualTo("{\"status\":\"no-leader\",\"id\":\"q\\\"b\\\\s\\u0001\\n<&> "
                + "\u00e9\ud83d\ude00\",\"role\":\"FOLLOWER\",\"leader\":\"\",\"appliedIndex\":0,"
                + "\"division\":\"RUNNING\"}\n");
        JsonObject read = JsonParser.parseString(health.json()).getAsJsonObject();
        assertThat(read.get("id").getAsString()).isEqualTo(peerId);
    }

    /** A closed division knows no leader it could ever serve through, whatever it last knew. */
    @Test
    void lockHealth_divisionClosedWithALeaderKnown_answers503WithTheDivisionsState() {
        AdminHttpServer.Health health = AdminHttpServer.lockHealth("n1", "FOLLOWER", "127.0.0.1:7070", 12, "CLOSED",
                null);

        assertThat(health.status()).isEqualTo(503);
        assertThat(health.json()).isEqualTo("{\"status\":\"not-running\",\"id\":\"n1\",\"role\":\"FOLLOWER\","
                + "\"leader\":\"127.0.0.1:7070\",\"appliedIndex\":12,\"division\":\"CLOSED\"}\n");
    }

    @Test
    void lockHealth_halted_answers503NamingTheIndexTheReasonAndTheRecovery() {
        ApplyHalt halt = new ApplyHalt(42, 3, "IllegalStateException: broken");

        AdminHttpServer.Health health = AdminHttpServer.lockHealth("n1", "LEADER", "127.0.0.1:7070", 41, "RUNNING",
                halt);

        assertThat(health.status()).isEqualTo(503);
        JsonObject read = JsonParser.parseString(health.json()).getAsJsonObject();
        assertThat(read.get("status").getAsString()).isEqualTo("halted");
        assertThat(read.get("index").getAsLong()).isEqualTo(42);
        assertThat(read.get("reason").getAsString()).isEqualTo("IllegalStateException: broken");
        assertThat(read.get("recovery").getAsString()).isEqualTo(ApplyHalt.RECOVERY);
        assertThat(read.get("appliedIndex").getAsLong()).isEqualTo(41);
    }

    @Test
    void storeHealth_servingOrClosing_pinsTheBody() {
        assertThat(AdminHttpServer.storeHealth(true, 3))
                .isEqualTo(new AdminHttpServer.Health(200, "{\"status\":\"ok\",\"role\":\"store\",\"unitsOpen\":3}\n"));
        assertThat(AdminHttpServer.storeHealth(false, 0)).isEqualTo(
                new AdminHttpServer.Health(503, "{\"status\":\"closing\",\"role\":\"store\",\"unitsOpen\":0}\n"));
    }
}
