package io.fencer.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.fencer.client.LockStatus;
import io.fencer.core.FencingToken;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The shape of {@code lock status --json}: one object per lock, an array for the list. */
class LockStatusCommandTest {

    @Test
    void toJson_heldLockWithHardNameAndLargestToken_pinsTheShape() {
        String lock = "q\"b\\s \u00e9\ud83d\ude00";
        FencingToken holder = new FencingToken(lock, FencingToken.VALUE_MAX);
        LockStatus status = new LockStatus(lock, holder, "billing \"eu\"", List.of(3L, Long.MAX_VALUE),
                Long.MAX_VALUE, true, "ended\u0001\n");

        String json = LockStatusCommand.toJson(status).toString();

        String quotedLock = "\"q\\\"b\\\\s \u00e9\ud83d\ude00";
        assertThat(json).isEqualTo("{\"format\":1,\"lock\":" + quotedLock + "\",\"holder\":" + quotedLock
                + "#9223372036854775806\","
                + "\"holderSequencer\":\"" + holder.sequencer() + "\",\"holderToken\":9223372036854775806,"
                + "\"holderIdentity\":\"billing \\\"eu\\\"\",\"waiterSessionIds\":[3,9223372036854775807],"
                + "\"waitersTotal\":2,\"lastToken\":9223372036854775807,\"delayed\":true,"
                + "\"lastEnd\":\"ended\\u0001\\n\",\"sharedHolders\":[],\"sharedHoldersTotal\":0}");
        JsonObject read = JsonParser.parseString(json).getAsJsonObject();
        assertThat(read.get("lock").getAsString()).isEqualTo(lock);
        assertThat(read.get("lastToken").getAsLong()).isEqualTo(Long.MAX_VALUE);
        assertThat(read.get("lastEnd").getAsString()).isEqualTo("ended\u0001\n");
    }

    @Test
    void toJson_freeLocks_writeNullsAndAnArray() {
        LockStatus free = new LockStatus("free", null, null, List.of(), 0, false, null);

        String json = Json.array(List.of(LockStatusCommand.toJson(free), LockStatusCommand.toJson(free)));

        String one = "{\"format\":1,\"lock\":\"free\",\"holder\":null,\"holderSequencer\":null,\"holderToken\":null,"
                + "\"holderIdentity\":null,\"waiterSessionIds\":[],\"waitersTotal\":0,\"lastToken\":0,"
                + "\"delayed\":false,\"lastEnd\":null,\"sharedHolders\":[],\"sharedHoldersTotal\":0}";
        assertThat(json).isEqualTo("[" + one + "," + one + "]");
    }

    @Test
    void tableAndJson_sharedLock_showTheReadersAndTheEarliestToken() {
        FencingToken first = new FencingToken("db", 3, io.fencer.core.LockMode.SHARED);
        FencingToken second = new FencingToken("db", 4, io.fencer.core.LockMode.SHARED);
        LockStatus shared = new LockStatus("db", null, null, List.of(), 4, false, null, List.of(first, second));

        assertThat(LockStatusCommand.table(List.of(shared))).contains("2 shared, earliest db#3(shared)");
        JsonObject read = JsonParser.parseString(LockStatusCommand.toJson(shared).toString()).getAsJsonObject();
        assertThat(read.getAsJsonArray("sharedHolders")).hasSize(2);
        assertThat(read.getAsJsonArray("sharedHolders").get(1).getAsJsonObject().get("sequencer").getAsString())
                .isEqualTo(second.sequencer());
    }

    @Test
    void tableAndJson_queuesListedInPart_showTheTotals() {
        FencingToken first = new FencingToken("db", 3, io.fencer.core.LockMode.SHARED);
        LockStatus shared = new LockStatus("db", null, null, List.of(7L), 1_503, false, null, List.of(first), 4_200,
                1_500);

        assertThat(LockStatusCommand.table(List.of(shared))).contains("1500 shared, earliest db#3(shared)")
                .contains("  4200  ");
        JsonObject read = JsonParser.parseString(LockStatusCommand.toJson(shared).toString()).getAsJsonObject();
        assertThat(read.get("waitersTotal").getAsInt()).isEqualTo(4_200);
        assertThat(read.get("sharedHoldersTotal").getAsInt()).isEqualTo(1_500);
        assertThat(read.getAsJsonArray("waiterSessionIds")).hasSize(1);
    }
}
