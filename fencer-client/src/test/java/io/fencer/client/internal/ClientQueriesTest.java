package io.fencer.client.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fencer.api.v1.EndCause;
import io.fencer.api.v1.ListResponse;
import io.fencer.api.v1.LockInfo;
import io.fencer.api.v1.ValidateResponse;
import io.fencer.api.v1.Waiter;
import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.LockStatus;
import io.fencer.client.TokenStatus;
import io.fencer.core.FencingToken;
import io.fencer.core.InvalidArgumentException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class ClientQueriesTest {
    private final FakeServer server = FakeServer.start();
    private final FencerClient client = Fencer.connect(server.endpoint());

    @AfterEach
    void tearDown() {
        client.close();
        server.close();
    }

    @Test
    void describe_heldLock_mapsEveryField() {
        server.locks.onDescribe = request -> LockInfo.newBuilder().setLock("orders")
                .setHolder(FakeLocks.token("orders", 32)).setHolderIdentity("billing")
                .addWaiters(Waiter.newBuilder().setSessionId(6).setRequestId("r6"))
                .addWaiters(Waiter.newBuilder().setSessionId(7).setRequestId("r7"))
                .setLastToken(32).build();

        LockStatus status = client.describe("orders");

        assertThat(status).isEqualTo(new LockStatus("orders", new FencingToken("orders", 32), "billing",
                List.of(6L, 7L), 32, false, null));
    }

    @Test
    void describe_freeDelayedLock_hasNoHolderAndTheLastEnd() {
        server.locks.onDescribe = request -> LockInfo.newBuilder().setLock("orders").setLastToken(40).setDelayed(true)
                .setLastEnd(EndCause.END_CAUSE_SESSION_EXPIRED).build();

        LockStatus status = client.describe("orders");

        assertThat(status.holder()).isNull();
        assertThat(status.holderIdentity()).isNull();
        assertThat(status.delayed()).isTrue();
        assertThat(status.lastEnd()).isEqualTo("SESSION_EXPIRED");
        assertThat(status.lastToken()).isEqualTo(40);
    }

    @Test
    void validate_eachStatus_mapsStatusAndFields() {
        server.locks.onValidate = request -> ValidateResponse.newBuilder().setStatus(ValidateResponse.Status.CURRENT)
                .setLastToken(9).setHolderIdentity("billing").setLeaseRemainingMillis(2_500).build();
        assertThat(client.validate(new FencingToken("orders", 9))).isEqualTo(
                new TokenStatus(TokenStatus.Status.CURRENT, 9, 0, "billing", Duration.ofMillis(2_500), null));

        server.locks.onValidate = request -> ValidateResponse.newBuilder()
                .setStatus(ValidateResponse.Status.SUPERSEDED).setLastToken(12).setSupersededBy(12)
                .setEnded(EndCause.END_CAUSE_SESSION_EXPIRED).build();
        TokenStatus superseded = client.validate(new FencingToken("orders", 9));
        assertThat(superseded.status()).isEqualTo(TokenStatus.Status.SUPERSEDED);
        assertThat(superseded.supersededBy()).isEqualTo(12);
        assertThat(superseded.ended()).isEqualTo("SESSION_EXPIRED");

        server.locks.onValidate = request -> ValidateResponse.newBuilder().setStatus(ValidateResponse.Status.ENDED)
                .setLastToken(9).setEnded(EndCause.END_CAUSE_RELEASED).build();
        assertThat(client.validate(new FencingToken("orders", 9)).ended()).isEqualTo("RELEASED");

        server.locks.onValidate = request -> ValidateResponse.newBuilder()
                .setStatus(ValidateResponse.Status.NEVER_ISSUED).setLastToken(9).build();
        assertThat(client.validate(new FencingToken("orders", 99)).status())
                .isEqualTo(TokenStatus.Status.NEVER_ISSUED);
    }

    @Test
    void validate_sendsTheTokensLockAndValue() {
        AtomicReference<io.fencer.api.v1.FencingToken> seen = new AtomicReference<>();
        server.locks.onValidate = request -> {
            seen.set(request.getToken());
            return ValidateResponse.newBuilder().setStatus(ValidateResponse.Status.ENDED).build();
        };

        client.validate(new FencingToken("orders", 31));

        assertThat(seen.get().getLock()).isEqualTo("orders");
        assertThat(seen.get().getValue()).isEqualTo(31);
    }

    @Test
    void list_mapsEveryLockInOrder() {
        server.locks.onList = request -> ListResponse.newBuilder()
                .addLocks(LockInfo.newBuilder().setLock(request.getPrefix() + "a").setLastToken(1))
                .addLocks(LockInfo.newBuilder().setLock(request.getPrefix() + "b").setLastToken(2)).build();

        List<LockStatus> locks = client.list("jobs/", 10);

        assertThat(locks).extracting(LockStatus::lock).containsExactly("jobs/a", "jobs/b");
        assertThat(locks).extracting(LockStatus::lastToken).containsExactly(1L, 2L);
    }

    @Test
    void list_limitOutOfRange_throwsInvalidArgument() {
        assertThatThrownBy(() -> client.list("", 1_001)).isInstanceOf(InvalidArgumentException.class)
                .hasMessageContaining("1001");
        assertThatThrownBy(() -> client.list("", -1)).isInstanceOf(InvalidArgumentException.class);
        assertThat(server.locks.count("List")).isZero();
    }
}
