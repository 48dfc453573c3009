package io.fencer.server.raft;

import static org.assertj.core.api.Assertions.assertThat;

import org.apache.ratis.proto.RaftProtos.AppendEntriesRequestProto;
import org.apache.ratis.proto.RaftProtos.LogEntryProto;
import org.apache.ratis.proto.RaftProtos.MetadataProto;
import org.apache.ratis.proto.RaftProtos.RaftConfigurationProto;
import org.apache.ratis.proto.RaftProtos.StateMachineLogEntryProto;
import org.apache.ratis.protocol.ClientId;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;
import org.junit.jupiter.api.Test;

/** The entries the Raft port refuses because Ratis could not apply them, and those it lets through. */
class LogEntryShapesTest {
    private static final ByteString CLIENT_ID = ClientId.randomId().toByteString();

    @Test
    void refusal_stateMachineEntryWithAClientIdOfTheWrongLength_namesTheLength() {
        for (int bytes : new int[] {0, 1, 15, 17, 64}) {
            LogEntryProto entry = command(3, ByteString.copyFrom(new byte[bytes]));

            assertThat(LogEntryShapes.refusal(entry)).as("a client id of %d bytes", bytes)
                    .isEqualTo("has a client id of " + bytes + " bytes, not 16: Ratis cannot apply it");
        }
    }

    @Test
    void refusal_entryWithoutABody_isRefused() {
        LogEntryProto entry = LogEntryProto.newBuilder().setTerm(2).setIndex(3).build();

        assertThat(LogEntryShapes.refusal(entry)).contains("has no body");
    }

    @Test
    void refusal_entriesRatisApplies_passWhateverTheirData() {
        assertThat(LogEntryShapes.refusal(command(3, CLIENT_ID))).isNull();
        assertThat(LogEntryShapes.refusal(LogEntryProto.newBuilder().setTerm(2).setIndex(4)
                .setConfigurationEntry(RaftConfigurationProto.getDefaultInstance()).build())).isNull();
        assertThat(LogEntryShapes.refusal(LogEntryProto.newBuilder().setTerm(2).setIndex(5)
                .setMetadataEntry(MetadataProto.newBuilder().setCommitIndex(4)).build())).isNull();
    }

    @Test
    void refusal_requestWithOneBadEntryAmongGoodOnes_namesItsIndexAndTerm() {
        AppendEntriesRequestProto request = AppendEntriesRequestProto.newBuilder()
                .addEntries(command(7, CLIENT_ID)).addEntries(command(8, ByteString.EMPTY))
                .addEntries(command(9, CLIENT_ID)).build();

        assertThat(LogEntryShapes.refusal(request)).startsWith("log entry 8 (term 2) has a client id of 0 bytes");
        assertThat(LogEntryShapes.refusal(AppendEntriesRequestProto.getDefaultInstance())).as("a heartbeat")
                .isNull();
    }

    private static LogEntryProto command(long index, ByteString clientId) {
        return LogEntryProto.newBuilder().setTerm(2).setIndex(index)
                .setStateMachineLogEntry(StateMachineLogEntryProto.newBuilder().setClientId(clientId).setCallId(1)
                        .setLogData(ByteString.copyFromUtf8("anything")))
                .build();
    }
}
