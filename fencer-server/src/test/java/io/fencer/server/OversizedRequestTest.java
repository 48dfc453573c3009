package io.fencer.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import com.google.protobuf.ByteString;
import io.fencer.api.errors.WireErrors;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.ListRequest;
import io.fencer.api.v1.Op;
import io.fencer.api.v1.Put;
import io.fencer.api.v1.Reason;
import io.fencer.api.v1.StoreGrpc;
import io.fencer.api.v1.WriteRequest;
import io.fencer.core.LimitExceededException;
import io.fencer.core.ManualTicker;
import io.fencer.server.store.StoreRole;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.StatusProto;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A gRPC request over the largest limit of the port's services (the store's 5 MiB) is refused in the catalogue's
 * shape: RESOURCE_EXHAUSTED with an ErrorDetail naming the limit, and the request's size in its sentence, so the
 * client maps it to {@link LimitExceededException} as it maps every other limit.
 */
class OversizedRequestTest {
    private static final int MIB = 1024 * 1024;

    @TempDir
    static Path dataDir;
    private static FencerServer server;
    private static ManagedChannel channel;

    @BeforeAll
    static void start() throws Exception {
        server = FencerServer.start(TestServers.singlePeer(dataDir, new ManualTicker()));
        channel = TestServers.channel(server);
        TestServers.awaitServing(server, channel);
    }

    @AfterAll
    static void stop() throws Exception {
        TestServers.close(channel);
        server.close();
    }

    /** Returns a write of {@code ops} puts of one MiB each: over the store's limits, which is the point. */
    private static WriteRequest write(int ops) {
        WriteRequest.Builder request = WriteRequest.newBuilder().setScope("oversized").setSequencer("fencer1.b3Y.1");
        for (int i = 0; i < ops; i++) {
            request.addOps(Op.newBuilder().setPut(Put.newBuilder().setKey(ByteString.copyFromUtf8("k" + i))
                    .setValue(ByteString.copyFrom(new byte[MIB]))));
        }
        return request.build();
    }

    private static StatusRuntimeException refusal(WriteRequest request) {
        return catchThrowableOfType(StatusRuntimeException.class, () -> StoreGrpc.newBlockingStub(channel)
                .withDeadlineAfter(60, TimeUnit.SECONDS).write(request));
    }

    @Test
    void write_overTheStoresMessageLimit_isResourceExhaustedWithAnErrorDetailNamingLimitAndSize() {
        WriteRequest request = write(6);
        int size = request.getSerializedSize();
        assertThat(size).as("the control: over the limit").isGreaterThan(StoreRole.INBOUND_MESSAGE_BYTES_MAX);

        StatusRuntimeException error = refusal(request);

        assertThat(error.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
        ErrorDetail detail = TestServers.detail(error);
        assertThat(detail.getReason()).isEqualTo(Reason.REASON_LIMIT_EXCEEDED);
        assertThat(detail.getLimit()).isEqualTo("inboundMessageBytesMax");
        assertThat(detail.getLimitValue()).isEqualTo(StoreRole.INBOUND_MESSAGE_BYTES_MAX);
        assertThat(detail.getMessage()).contains(size + " bytes", StoreRole.INBOUND_MESSAGE_BYTES_MAX + " bytes");
        assertThat(WireErrors.toException(error)).isInstanceOfSatisfying(LimitExceededException.class,
                mapped -> assertThat(mapped.limitValue()).isEqualTo(StoreRole.INBOUND_MESSAGE_BYTES_MAX));
        assertThat(TestServers.stub(channel).list(ListRequest.getDefaultInstance())).as("still serving").isNotNull();
    }

    @Test
    void write_overTwiceTheLimit_isRefusedUnreadByTheTransportWithBothSizesInItsSentence() {
        WriteRequest request = write(11);

        StatusRuntimeException error = refusal(request);

        assertThat(error.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
        assertThat(error.getStatus().getDescription()).contains(Integer.toString(request.getSerializedSize()));
        assertThat(StatusProto.fromThrowable(error).getDetailsCount()).as("gRPC's transport sends no details")
                .isZero();
        assertThat(WireErrors.detail(error)).isEmpty();
        assertThat(TestServers.stub(channel).list(ListRequest.getDefaultInstance())).as("still serving").isNotNull();
    }
}
