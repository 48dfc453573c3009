package io.fencer.client.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;

import io.fencer.api.v1.EndCause;
import io.fencer.api.v1.ListRequest;
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
    void list_pagesCutBySize_asksAfterEachPagesLastLockUntilTheLimit() {
        List<String> names = List.of("jobs/a", "jobs/b", "jobs/c", "jobs/d", "jobs/e");
        List<ListRequest> asked = new java.util.concurrent.CopyOnWriteArrayList<>();
        server.locks.onList = request -> {
            asked.add(request);
            List<String> after = names.stream().filter(name -> name.compareTo(request.getStartAfter()) > 0).toList();
            List<String> page = after.subList(0, Math.min(2, Math.min(request.getLimit(), after.size())));
            ListResponse.Builder response = ListResponse.newBuilder().setMore(after.size() > page.size());
            page.forEach(name -> response.addLocks(LockInfo.newBuilder().setLock(name)));
            return response.build();
        };

        List<LockStatus> four = client.list("jobs/", 4);
        List<LockStatus> rest = client.list("jobs/", "jobs/d", 10);

        assertThat(four).extracting(LockStatus::lock).containsExactly("jobs/a", "jobs/b", "jobs/c", "jobs/d");
        assertThat(asked.subList(0, 2)).extracting(ListRequest::getStartAfter, ListRequest::getLimit)
                .containsExactly(tuple("", 4), tuple("jobs/b", 2));
        assertThat(rest).extracting(LockStatus::lock).containsExactly("jobs/e");
        assertThat(asked).hasSize(3);
    }

    @Test
    void list_serverBeforePagingOrOneThatSaysMoreForever_endsAtItsLimit() {
        server.locks.onList = request -> ListResponse.newBuilder()
                .addLocks(LockInfo.newBuilder().setLock("jobs/a")).build();
        assertThat(client.list("jobs/", "jobs/a", 10)).as("a server before start_after ignores it: one page")
                .extracting(LockStatus::lock).containsExactly("jobs/a");

        server.locks.onList = request -> ListResponse.newBuilder().setMore(true)
                .addLocks(LockInfo.newBuilder().setLock("jobs/a")).build();
        assertThat(client.list("jobs/", 3)).hasSize(3);
        assertThat(server.locks.count("List")).isEqualTo(4);
    }

    @Test
    void describe_queuesShownInPart_countsThemAllAndTrustsTheListsOfOlderServers() {
        server.locks.onDescribe = request -> LockInfo.newBuilder().setLock("orders").setWaitersTotal(4_200)
                .setSharedHoldersTotal(0).addWaiters(Waiter.newBuilder().setSessionId(6)).build();
        LockStatus status = client.describe("orders");
        assertThat(status.waiterSessionIds()).containsExactly(6L);
        assertThat(status.waitersTotal()).isEqualTo(4_200);

        server.locks.onDescribe = request -> LockInfo.newBuilder().setLock("orders")
                .addWaiters(Waiter.newBuilder().setSessionId(6)).addWaiters(Waiter.newBuilder().setSessionId(7))
                .addSharedHolders(io.fencer.api.v1.SharedHolder.newBuilder().setToken(FakeLocks.token("orders", 3)))
                .build();
        LockStatus older = client.describe("orders");
        assertThat(older.waitersTotal()).as("no total sent: the list is whole").isEqualTo(2);
        assertThat(older.sharedHoldersTotal()).isEqualTo(1);
    }

    @Test
    void list_limitOutOfRange_throwsInvalidArgument() {
        assertThatThrownBy(() -> client.list("", 1_001)).isInstanceOf(InvalidArgumentException.class)
                .hasMessageContaining("1001");
        assertThatThrownBy(() -> client.list("", -1)).isInstanceOf(InvalidArgumentException.class);
        assertThat(server.locks.count("List")).isZero();
    }
}
