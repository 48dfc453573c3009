package io.fencer.server;

import static io.fencer.server.TestServers.acquire;
import static io.fencer.server.TestServers.acquireRequest;
import static io.fencer.server.TestServers.describe;
import static io.fencer.server.TestServers.openSession;
import static io.fencer.server.TestServers.release;
import static io.fencer.server.TestServers.releaseRequest;
import static io.fencer.server.TestServers.waiterSessions;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.common.util.concurrent.ListenableFuture;
import com.google.protobuf.Descriptors;
import com.google.protobuf.Message;
import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.FencingToken;
import io.fencer.api.v1.ListRequest;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.PipelineResponse;
import io.fencer.api.v1.ReleaseResponse;
import io.fencer.api.v1.ValidateRequest;
import io.fencer.core.ManualTicker;
import io.fencer.core.Sequencer;
import io.fencer.core.TokenKeys;
import io.fencer.server.TestServers.TestSession;
import io.grpc.ManagedChannel;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * With token keys, a signed sequencer is a credential: whoever holds it writes to resources as the holder. Only the
 * grantee's own Acquire answer may carry it; every other reply that names a token names it unsigned.
 */
class SignedRepliesTest {
    private static final long TTL_MILLIS = 60_000;
    private static final Duration WAIT_MAX = Duration.ofSeconds(30);

    @TempDir
    Path dataDir;
    private final TokenKeys keys = TokenKeys.generate("k1");
    private FencerServer server;
    private ManagedChannel channel;
    private LocksGrpc.LocksBlockingStub stub;

    @BeforeEach
    void start() throws Exception {
        server = FencerServer.start(TestServers.singlePeer(dataDir, new ManualTicker())
                .withTokenKeys(keys));
        channel = TestServers.channel(server);
        stub = TestServers.stub(channel);
        TestServers.awaitServing(server, channel);
    }

    @AfterEach
    void stop() throws Exception {
        TestServers.close(channel);
        server.close();
    }

    @Test
    void replies_otherThanTheGranteesOwnAcquire_carryNoSignedSequencer() throws Exception {
        TestSession holder = openSession(stub, TTL_MILLIS);
        TestSession other = openSession(stub, TTL_MILLIS);
        TestSession waiter = openSession(stub, TTL_MILLIS);
        AcquireResponse granted = acquire(stub, holder, "orders", 0);
        List<String> signed = new ArrayList<>(List.of(signedSequencer(granted.getToken())));
        ListenableFuture<AcquireResponse> waiting = LocksGrpc.newFutureStub(channel)
                .withDeadlineAfter(60, TimeUnit.SECONDS).acquire(acquireRequest(waiter, "orders", "w", 30_000));
        await().atMost(WAIT_MAX).until(() -> waiterSessions(stub, "orders").contains(waiter.id()));

        List<Message> replies = new ArrayList<>();
        replies.add(acquire(stub, other, "orders", 0)); // refused: the lock is held
        replies.add(acquire(stub, waiter, "orders", 0)); // a try while the session waits
        replies.add(acquire(stub, other, "orders", 200)); // a wait that runs out
        replies.add(describe(stub, "orders"));
        replies.add(stub.list(ListRequest.getDefaultInstance()));
        replies.add(stub.validate(ValidateRequest.newBuilder().setToken(granted.getToken()).build()));
        ReleaseResponse released = release(stub, holder, granted.getToken());
        replies.add(released);
        AcquireResponse next = waiting.get(30, TimeUnit.SECONDS);
        signed.add(signedSequencer(next.getToken())); // the next holder's own answer is signed
        replies.add(TestServers.closeSession(stub, waiter));

        int tokensNamed = 0;
        for (Message reply : replies) {
            tokensNamed += assertNoSignedSequencer(reply, signed);
        }
        assertThat(tokensNamed).as("the replies name the grants, unsigned").isEqualTo(8);
        assertThat(released.getNext().getValue()).isEqualTo(next.getToken().getValue());
        assertThat(released.getReleased().getValue()).isEqualTo(granted.getToken().getValue());
    }

    @Test
    void pipelinedReplies_otherThanTheGranteesOwnAcquire_carryNoSignedSequencer() throws Exception {
        TestSession holder = openSession(stub, TTL_MILLIS);
        TestSession other = openSession(stub, TTL_MILLIS);
        PipelineTest.Pipe pipe = new PipelineTest.Pipe(channel);
        try {
            PipelineResponse granted = pipe.call(1, acquireRequest(holder, "jobs", "a1", 0));
            PipelineResponse busy = pipe.call(2, acquireRequest(other, "jobs", "a2", 0));
            PipelineResponse released = pipe.call(3, releaseRequest(holder, granted.getAcquire().getToken()));
            List<String> signed = List.of(signedSequencer(granted.getAcquire().getToken()));

            assertThat(assertNoSignedSequencer(busy, signed)).isEqualTo(1);
            assertThat(assertNoSignedSequencer(released, signed)).isEqualTo(1);
            assertThat(busy.getAcquire().getHolder().getValue()).isEqualTo(granted.getAcquire().getToken().getValue());
        } finally {
            pipe.close();
        }
    }

    /** Checks that {@code token} is signed with the server's keys, and returns its sequencer. */
    private String signedSequencer(FencingToken token) {
        assertThat(token.getSequencer().split("\\.")).as("signed sequencer of %s", token.getValue()).hasSize(5);
        assertThat(Sequencer.parse(token.getSequencer(), keys).value()).isEqualTo(token.getValue());
        return token.getSequencer();
    }

    /**
     * Checks that no token in {@code reply} (at any depth) has a signed sequencer and that its bytes hold none of
     * the {@code signed} ones; returns how many tokens it names.
     */
    private static int assertNoSignedSequencer(Message reply, List<String> signed) {
        String bytes = reply.toByteString().toStringUtf8();
        for (String sequencer : signed) {
            assertThat(bytes).as("%s", reply.getClass().getSimpleName()).doesNotContain(sequencer);
        }
        return countUnsignedTokens(reply);
    }

    private static int countUnsignedTokens(Message message) {
        if (message instanceof FencingToken token) {
            assertThat(token.getSequencer().split("\\.")).as("sequencer %s", token.getSequencer()).hasSize(3);
            return 1;
        }
        int count = 0;
        for (Map.Entry<Descriptors.FieldDescriptor, Object> field : message.getAllFields().entrySet()) {
            List<?> values = field.getValue() instanceof List<?> list ? list : List.of(field.getValue());
            for (Object value : values) {
                if (value instanceof Message nested) {
                    count += countUnsignedTokens(nested);
                }
            }
        }
        return count;
    }
}
