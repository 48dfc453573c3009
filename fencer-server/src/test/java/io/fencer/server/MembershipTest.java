package io.fencer.server;

import static io.fencer.server.TestServers.acquire;
import static io.fencer.server.TestServers.failure;
import static io.fencer.server.TestServers.openSession;
import static io.fencer.server.TestServers.release;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.AddPeerRequest;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.ListPeersRequest;
import io.fencer.api.v1.ListPeersResponse;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.PeerInfo;
import io.fencer.api.v1.Reason;
import io.fencer.server.TestServers.TestSession;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.AutoClose;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Membership at run time, in process: fencer.v1.Peers on groups of real servers. */
class MembershipTest {
    private static final long TTL_MILLIS = 60_000;
    /** The longest wait an Acquire may ask for: one waiting so long ends only when something ends it. */
    private static final long WAIT_MILLIS_MAX = 3_600_000;

    @TempDir
    Path dataRoot;
    @AutoClose
    private PeerGroup group;

    @Test
    void addPromoteRemove_whileGranting_changesTheGroupAndTokensKeepIncreasing() throws Exception {
        group = new PeerGroup(dataRoot, 3, UnaryOperator.identity(), false).startFounders();
        String leader = group.awaitLeader();
        LocksGrpc.LocksBlockingStub locks = TestServers.stub(group.channel(leader));
        TestSession session = openSession(locks, TTL_MILLIS);
        long last = grant(locks, session, 0);
        PeerGroup.Member n4 = group.newJoiner(4);
        FencerServer joiner = group.start(n4.id());
        assertThat(joiner.sincePeerTraffic()).as("a joiner hears nobody until the group adds it").isNull();

        assertThat(group.server(leader).configurationSize()).isEqualTo(3);
        ListPeersResponse added = group.add(leader, n4).getConfiguration();
        assertThat(group.server(leader).configurationSize()).as("the learner counts").isEqualTo(4);
        assertThat(joiner.sincePeerTraffic()).as("then the leader's log and heartbeats").isNotNull()
                .isLessThan(Duration.ofSeconds(5));
        last = grant(locks, session, last);
        group.awaitCaughtUp(leader, n4.id());
        ListPeersResponse promoted = group.promote(leader, n4.id()).getConfiguration();
        last = grant(locks, session, last);
        // Three of four voters are a majority only with the new one: it votes, as a voter the group added must.
        group.stop(leader);
        String newLeader = group.awaitLeader();
        locks = TestServers.stub(group.channel(newLeader));
        session = openSession(locks, TTL_MILLIS);
        last = grant(locks, session, last);
        ListPeersResponse withoutOldLeader = group.remove(newLeader, leader).getConfiguration();
        last = grant(locks, session, last);

        assertThat(PeerGroup.shape(added)).contains(n4.id() + " LEARNER").hasSize(4);
        assertThat(added.getPeersList()).filteredOn(PeerInfo::getLeader).singleElement()
                .satisfies(p -> assertThat(p.getId()).isEqualTo(leader));
        assertThat(PeerGroup.shape(promoted)).contains(n4.id() + " VOTER").noneMatch(s -> s.endsWith("LEARNER"));
        assertThat(PeerGroup.shape(withoutOldLeader)).hasSize(3).noneMatch(s -> s.startsWith(leader + " "));
        assertThat(group.member(n4.id()).clientAddress()).isEqualTo(withoutOldLeader.getPeersList().stream()
                .filter(p -> p.getId().equals(n4.id())).findFirst().orElseThrow().getClientAddress());
        assertRemovedWhileDownCannotDisturb(newLeader, leader, session);
        String removed = group.running().stream().filter(id -> !id.equals(newLeader) && !id.equals(leader))
                .findFirst().orElseThrow();
        assertThat(PeerGroup.shape(group.remove(newLeader, removed).getConfiguration())).hasSize(2);
        assertThat(group.server(newLeader).configurationSize()).isEqualTo(2);
        assertRemovedPeerServesNothing(removed, session);
        assertThat(grant(locks, session, last)).isGreaterThan(last);
    }

    /** Grants "orders" and releases it; returns the token, checked above {@code last}. */
    private static long grant(LocksGrpc.LocksBlockingStub locks, TestSession session, long last) {
        AcquireResponse granted = acquire(locks, session, "orders", 0);
        assertThat(granted.getToken().getValue()).isGreaterThan(last);
        release(locks, session, granted.getToken());
        return granted.getToken().getValue();
    }

    /**
     * A peer removed while it was down comes back with the old configuration, in which it still votes: it stands for
     * election, and the leader answers its vote request by telling it to shut down. The leader keeps its term, which
     * a vote it counted would have ended.
     */
    private void assertRemovedWhileDownCannotDisturb(String leader, String removed, TestSession session)
            throws Exception {
        long term = group.server(leader).currentTerm();
        FencerServer back = group.start(removed);
        // The control that it campaigned: only the leader's answer to its vote request closes its division.
        PeerGroup.dumpingThreads("the leader never told removed peer " + removed + " to shut down", () -> await()
                .atMost(PeerGroup.ELECTION_MAX).untilAsserted(() -> assertThat(failure(() -> acquire(
                        TestServers.stub(group.channel(removed)), session, "orders", 0)).getMessage())
                        .as("what the removed peer answers").contains("CLOSED")));
        Thread.sleep(2_400); // three of the longest election timeouts (800 ms): time for a disturbed election

        assertThat(back.isLeader()).isFalse();
        assertThat(group.server(leader).isLeader()).isTrue();
        assertThat(group.server(leader).currentTerm()).as("no election disturbed the leader").isEqualTo(term);
        group.stop(removed);
    }

    /** A peer removed while it ran answers UNAVAILABLE, naming its removal, and grants nothing. */
    private void assertRemovedPeerServesNothing(String removed, TestSession session) {
        LocksGrpc.LocksBlockingStub onRemoved = TestServers.stub(group.channel(removed));
        await().atMost(PeerGroup.ELECTION_MAX).untilAsserted(() -> {
            ErrorDetail refused = failure(() -> acquire(onRemoved, session, "orders", 0));
            assertThat(refused.getReason()).isEqualTo(Reason.REASON_UNAVAILABLE);
            // It learnt its removal from the log ("was removed"), or the leader told it to shut down (Ratis closed it).
            assertThat(refused.getMessage()).containsAnyOf("peer " + removed + " was removed", "CLOSED");
        });
    }

    @Test
    void changes_badInput_eachRefusedNamingThePeerAndNothingChanges() throws Exception {
        group = new PeerGroup(dataRoot, 3, UnaryOperator.identity(), false).startFounders();
        String leader = group.awaitLeader();
        ListPeersResponse before = group.list(leader);
        PeerGroup.Member n1 = group.member(group.id(1));
        PeerGroup.Member notRunning = group.newJoiner(5);

        ErrorDetail existingId = failure(() -> group.add(leader, new PeerGroup.Member(n1.id(), 1, 2, false)));
        ErrorDetail existingAddress = failure(() -> group.peers(leader).add(AddPeerRequest.newBuilder()
                .setId("fresh").setRaftAddress(n1.raftAddress()).setClientAddress("127.0.0.1:1").build()));
        ErrorDetail unknown = failure(() -> group.remove(leader, "nobody"));
        ErrorDetail promoteVoter = failure(() -> group.promote(leader, n1.id()));
        ErrorDetail badId = failure(() -> group.remove(leader, "no spaces"));
        ErrorDetail onFollower = failure(() -> group.list(group.aFollower(leader)));
        ErrorDetail notStarted = failure(() -> group.add(leader, notRunning));

        assertRefused(existingId, n1.id(), "already in the group");
        assertRefused(existingAddress, "fresh", "already has the address " + n1.raftAddress());
        assertRefused(unknown, "nobody", "no such peer");
        assertRefused(promoteVoter, n1.id(), "a voter already");
        assertThat(badId.getReason()).isEqualTo(Reason.REASON_INVALID_ARGUMENT);
        assertThat(badId.getField()).isEqualTo("id");
        assertThat(onFollower.getReason()).isEqualTo(Reason.REASON_NOT_LEADER);
        assertThat(onFollower.getLeaderAddress()).isEqualTo(group.member(leader).clientAddress());
        assertRefused(notStarted, notRunning.id(), "did not answer or catch up", "--join");
        await().atMost(PeerGroup.ELECTION_MAX).until(() -> !group.list(leader).getChanging());
        assertThat(PeerGroup.shape(group.list(leader))).isEqualTo(PeerGroup.shape(before));
    }

    @Test
    void add_clientAddressThatIsARaftAddress_isRefusedNamingTheAddress() throws Exception {
        group = new PeerGroup(dataRoot, 3, UnaryOperator.identity(), false).startFounders();
        String leader = group.awaitLeader();
        PeerGroup.Member n1 = group.member(group.id(1));
        PeerGroup.Member n4 = group.newJoiner(4);
        group.start(n4.id());
        ListPeersResponse before = group.list(leader);

        // n4's clients would be sent to a Raft port, its own or n1's: a gRPC call there never reaches a lock service.
        ErrorDetail itsOwn = failure(() -> group.peers(leader).add(AddPeerRequest.newBuilder().setId(n4.id())
                .setRaftAddress(n4.raftAddress()).setClientAddress(n4.raftAddress()).build()));
        ErrorDetail another = failure(() -> group.peers(leader).add(AddPeerRequest.newBuilder().setId(n4.id())
                .setRaftAddress(n4.raftAddress()).setClientAddress(n1.raftAddress()).build()));

        assertRefused(itsOwn, n4.id(), n4.raftAddress());
        assertRefused(another, n4.id(), n1.raftAddress());
        assertThat(PeerGroup.shape(group.list(leader))).isEqualTo(PeerGroup.shape(before));
    }

    @Test
    void remove_leavingNoLiveMajority_isRefusedNamingTheDeadPeer() throws Exception {
        group = new PeerGroup(dataRoot, 3, UnaryOperator.identity(), false).startFounders();
        String leader = group.awaitLeader();
        String dead = group.aFollower(leader);
        String live = group.running().stream().filter(id -> !id.equals(leader) && !id.equals(dead)).findFirst()
                .orElseThrow();
        ListPeersResponse before = group.list(leader);
        group.stop(dead);
        await().atMost(PeerGroup.ELECTION_MAX).until(() -> group.list(leader).getPeersList().stream()
                .anyMatch(p -> p.getId().equals(dead) && !p.getLive()));

        ErrorDetail refused = failure(() -> group.remove(leader, live));

        assertRefused(refused, live, "no majority", dead);
        assertThat(PeerGroup.shape(group.list(leader))).isEqualTo(PeerGroup.shape(before));
        // The control: removing the dead peer itself leaves two live voters of two, and is allowed.
        assertThat(PeerGroup.shape(group.remove(leader, dead).getConfiguration())).hasSize(2);
    }

    @Test
    void remove_theLeaderItself_answersTheConfigurationWithoutIt() throws Exception {
        group = new PeerGroup(dataRoot, 3, UnaryOperator.identity(), false).startFounders();
        String leader = group.awaitLeader();
        List<String> others = group.running().stream().filter(id -> !id.equals(leader)).sorted().toList();

        ListPeersResponse answered = group.remove(leader, leader).getConfiguration();

        // The answer is computed as the change commits, on Ratis's leader thread, before the old leader steps down:
        // the voters left, never an empty group that `fencer peers remove` would print as one without peers.
        assertThat(PeerGroup.shape(answered)).containsExactly(others.get(0) + " VOTER", others.get(1) + " VOTER");
        assertThat(answered.getPeersList()).allSatisfy(peer -> assertThat(peer.getClientAddress())
                .isEqualTo(group.member(peer.getId()).clientAddress()));
        assertThat(answered.getConfigurationIndex()).isPositive();
        group.stop(leader);
        String newLeader = group.awaitLeader();
        assertThat(others).contains(newLeader);
        assertThat(PeerGroup.shape(group.list(newLeader))).isEqualTo(PeerGroup.shape(answered));
    }

    /**
     * The leader removes itself while clients use it: a holder keeps its session alive there, another session waits
     * for the lock, a watcher follows it. Once a remaining peer leads, the removed peer leads for nobody: it
     * acknowledges no keepalive (the new leader may expire that session), serves no read of its frozen state, ends
     * what waited on it, and refuses every call UNAVAILABLE naming the peers that remain, which clients go to.
     */
    @Test
    void remove_theLeaderItselfWhileClientsUseIt_theRemovedPeerServesThemNothing() throws Exception {
        group = new PeerGroup(dataRoot, 3, UnaryOperator.identity(), false).startFounders();
        String removed = group.awaitLeader();
        List<String> others = group.running().stream().filter(id -> !id.equals(removed)).sorted().toList();
        LocksGrpc.LocksBlockingStub onRemoved = TestServers.stub(group.channel(removed));
        TestSession holder = openSession(onRemoved, TTL_MILLIS);
        TestSession waiter = openSession(onRemoved, TTL_MILLIS);
        acquire(onRemoved, holder, "orders", 0);
        Watching watching = Watching.start(group.channel(removed), Watching.from("orders", 0, 0));
        assertThat(watching.next().getKind()).isEqualTo(io.fencer.api.v1.LockEvent.Kind.KIND_START);
        CompletableFuture<Object> waiting = CompletableFuture.supplyAsync(() -> answerOf(() -> acquire(
                LocksGrpc.newBlockingStub(group.channel(removed)).withDeadlineAfter(10, TimeUnit.MINUTES), waiter,
                "orders", WAIT_MILLIS_MAX)));
        await().atMost(PeerGroup.ELECTION_MAX).until(() -> TestServers.waiterSessions(onRemoved, "orders")
                .contains(waiter.id()));

        group.remove(removed, removed);
        String newLeader = awaitLeaderAmong(others);

        FencerServer old = group.server(removed);
        List<String> remaining = others.stream().map(id -> group.member(id).clientAddress()).toList();
        io.fencer.api.v1.AdminGrpc.AdminBlockingStub admin = io.fencer.api.v1.AdminGrpc.newBlockingStub(
                group.channel(removed)).withInterceptors(TestServers.CALL_DEADLINE);
        Map<String, String> answers = new LinkedHashMap<>();
        answers.put("KeepAlive", outcome(() -> TestServers.keepAliveOnce(group.channel(removed), holder)));
        answers.put("Describe", outcome(() -> TestServers.describe(onRemoved, "orders")));
        answers.put("Acquire", outcome(() -> acquire(onRemoved, waiter, "orders", 0)));
        answers.put("the Acquire waiting", outcome(() -> waiting.get(30, TimeUnit.SECONDS)));
        answers.put("the open Watch", outcome(() -> {
            throw watching.error();
        }));
        answers.put("a new Watch", outcome(() -> {
            throw Watching.start(group.channel(removed), Watching.from("orders", 0, 0)).error();
        }));
        answers.put("Backup", outcome(() -> admin.backup(io.fencer.api.v1.BackupRequest.getDefaultInstance()).next()));
        answers.put("Peers.List", outcome(() -> group.list(removed)));

        org.assertj.core.api.SoftAssertions.assertSoftly(softly -> {
            softly.assertThat(answers).allSatisfy((call, answer) -> assertThat(answer).as(call)
                    .startsWith(Reason.REASON_UNAVAILABLE.name()).contains("peer " + removed + " was removed")
                    .contains(remaining));
            softly.assertThat(old.isLeader()).as("the removed peer says it leads").isFalse();
            softly.assertThat(admin.status(io.fencer.api.v1.StatusRequest.getDefaultInstance()))
                    .as("its Status").returns(false, s -> s.getLeader()).returns("", s -> s.getLeaderAddress());
        });
        // The new leader serves the holder, whose session the removed peer never held for it.
        assertThat(TestServers.keepAliveOnce(group.channel(newLeader), holder).getExpired()).isFalse();
    }

    /** Returns how a call ended: its refusal's reason and message, its gRPC status, or what it answered. */
    private static String outcome(java.util.concurrent.Callable<?> call) {
        try {
            Object answer = call.call();
            if (answer instanceof io.grpc.StatusRuntimeException error) {
                throw error;
            }
            return "answered " + answer;
        } catch (io.grpc.StatusRuntimeException e) {
            if (io.grpc.protobuf.StatusProto.fromThrowable(e) == null) {
                return e.getStatus().toString();
            }
            ErrorDetail detail = TestServers.detail(e);
            return detail.getReason().name() + ": " + detail.getMessage();
        } catch (Exception | AssertionError e) {
            return "no answer: " + e;
        }
    }

    /** Waits until one of {@code ids} leads and serves keepalives; returns it. */
    private String awaitLeaderAmong(List<String> ids) {
        String[] found = new String[1];
        PeerGroup.dumpingThreads("none of " + ids + " leads", () -> await().atMost(PeerGroup.ELECTION_MAX)
                .ignoreExceptions().until(() -> {
                    found[0] = ids.stream().filter(id -> group.server(id).isLeader()).findFirst().orElse(null);
                    return found[0] != null
                            && TestServers.keepAliveOnce(group.channel(found[0]), Long.MAX_VALUE).getExpired();
                }));
        return found[0];
    }

    /** Returns what {@code call} answered, or the error it failed with. */
    private static Object answerOf(java.util.function.Supplier<?> call) {
        try {
            return call.get();
        } catch (io.grpc.StatusRuntimeException e) {
            return e;
        }
    }

    @Test
    void changes_whileAnotherIsInProgressOrByANonAdmin_areRefused() throws Exception {
        Path acl = Files.writeString(Files.createDirectories(dataRoot.resolve("acl")).resolve("fencer.acl"),
                "ops admin *\nauditor read *\nscheduler lock jobs/\n");
        group = new PeerGroup(dataRoot, 1, config -> config.withAcl(acl), true).startFounders();
        String leader = group.awaitLeader();
        PeerGroup.Member n2 = group.newJoiner(2);
        PeerGroup.Member n3 = group.newJoiner(3);
        group.start(n2.id());
        group.start(n3.id());
        ListPeersResponse before = group.peersAs(leader, "auditor").list(ListPeersRequest.getDefaultInstance());

        ErrorDetail notAdmin = failure(() -> group.peersAs(leader, "auditor").add(addRequest(n2)));
        ErrorDetail cannotRead = failure(() -> group.peersAs(leader, "scheduler")
                .list(ListPeersRequest.getDefaultInstance()));
        ErrorDetail lastVoter = failure(() -> group.peersAs(leader, "ops").remove(
                io.fencer.api.v1.RemovePeerRequest.newBuilder().setId(leader).build()));
        java.util.concurrent.CountDownLatch go = new java.util.concurrent.CountDownLatch(1);
        List<CompletableFuture<ErrorDetail>> racing = List.of(n2, n3).stream().map(member -> CompletableFuture
                .supplyAsync(() -> {
                    awaitLatch(go);
                    try {
                        group.peersAs(leader, "ops").add(addRequest(member));
                        return (ErrorDetail) null;
                    } catch (io.grpc.StatusRuntimeException e) {
                        return TestServers.detail(e);
                    }
                })).toList();
        go.countDown();
        List<ErrorDetail> outcomes = racing.stream().map(CompletableFuture::join).toList();
        await().atMost(PeerGroup.ELECTION_MAX).until(() -> !group.peersAs(leader, "ops")
                .list(ListPeersRequest.getDefaultInstance()).getChanging());
        List<String> after = PeerGroup.shape(group.peersAs(leader, "ops").list(ListPeersRequest.getDefaultInstance()));
        String learner = outcomes.get(0) == null ? n2.id() : n3.id();
        // A learner's address is taken as a voter's is: a second peer on it is refused.
        ErrorDetail learnersAddress = failure(() -> group.peersAs(leader, "ops").add(AddPeerRequest.newBuilder().setId("copy")
                .setRaftAddress(group.member(learner).raftAddress()).setClientAddress("127.0.0.1:1").build()));

        assertThat(notAdmin.getReason()).isEqualTo(Reason.REASON_PERMISSION_DENIED);
        assertThat(notAdmin.getIdentity()).isEqualTo("auditor");
        assertThat(notAdmin.getPermission()).isEqualTo("admin");
        assertThat(cannotRead.getReason()).isEqualTo(Reason.REASON_PERMISSION_DENIED);
        assertThat(cannotRead.getPermission()).isEqualTo("read");
        assertRefused(lastVoter, leader, "last voter");
        assertRefused(learnersAddress, "copy", "peer '" + learner + "' already has the address");
        assertThat(PeerGroup.shape(before)).containsExactly(leader + " VOTER");
        // Two changes racing cannot both win on the same configuration: each one that succeeded is in force (a
        // lost update would drop one), and one that lost was refused as MEMBERSHIP_REFUSED, never half-applied.
        for (int i = 0; i < 2; i++) {
            String id = List.of(n2, n3).get(i).id();
            if (outcomes.get(i) == null) {
                assertThat(after).contains(id + " LEARNER");
            } else {
                assertThat(outcomes.get(i).getReason()).as(outcomes.get(i).getMessage())
                        .isEqualTo(Reason.REASON_MEMBERSHIP_REFUSED);
                assertThat(after).noneMatch(s -> s.startsWith(id + " "));
            }
        }
        assertThat(outcomes).as("at least one of them succeeds").contains((ErrorDetail) null);
    }

    private static void awaitLatch(java.util.concurrent.CountDownLatch latch) {
        try {
            latch.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private static AddPeerRequest addRequest(PeerGroup.Member member) {
        return AddPeerRequest.newBuilder().setId(member.id()).setRaftAddress(member.raftAddress())
                .setClientAddress(member.clientAddress()).build();
    }

    @Test
    void configuration_afterARestartOfEveryPeer_isTheChangedOneWhateverPeersSays() throws Exception {
        group = new PeerGroup(dataRoot, 3, UnaryOperator.identity(), false).startFounders();
        String leader = group.awaitLeader();
        PeerGroup.Member n4 = group.newJoiner(4);
        group.start(n4.id());
        group.add(leader, n4);
        group.awaitCaughtUp(leader, n4.id());
        group.promote(leader, n4.id());
        String removed = group.aFollower(leader).equals(n4.id()) ? group.id(3) : group.aFollower(leader);
        ListPeersResponse changed = group.remove(leader, removed).getConfiguration();
        group.stop(removed);
        List<String> remaining = group.running();
        for (String id : remaining) {
            group.stop(id);
        }

        for (String id : remaining) {
            group.start(id); // founders with their first --peers, which still names the removed peer
        }
        String newLeader = group.awaitLeader();

        assertThat(PeerGroup.shape(group.list(newLeader))).isEqualTo(PeerGroup.shape(changed))
                .contains(n4.id() + " VOTER").noneMatch(s -> s.startsWith(removed + " "));
    }

    private static void assertRefused(ErrorDetail detail, String peer, String... why) {
        assertThat(detail.getReason()).as(detail.getMessage()).isEqualTo(Reason.REASON_MEMBERSHIP_REFUSED);
        assertThat(detail.getValue()).isEqualTo(peer);
        assertThat(detail.getWhy()).contains(why);
        assertThat(detail.getMessage()).contains("'" + peer + "'");
    }
}
