package io.fencer.server;

import static io.fencer.server.TestServers.failure;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.FencingToken;
import io.fencer.api.v1.LockEvent;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.Reason;
import io.fencer.api.v1.StoreGrpc;
import io.fencer.core.ManualTicker;
import io.fencer.server.StoreServiceTest.StoreTesting;
import io.fencer.server.TestServers.TestSession;
import io.fencer.server.rpc.TestIdentities;
import io.grpc.ManagedChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * Each grant names its holder's identity: a line of the grants log and the Watch's GRANTED event; a refused store
 * write's log line names the presented token, which joins it to the grant line of the holder whose write it was.
 * One server for the class (each test its own lock), its stderr read throughout.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class GrantIdentityTest {
    private static final long TTL_MILLIS = 60_000;
    private static final Duration LOGGED_MAX = Duration.ofSeconds(10);
    private static final String RULES = """
            worker-1 lock  jobs/
            worker-1 write jobs/
            worker-2 lock  jobs/
            worker-2 write jobs/
            ops      admin *
            """;

    @TempDir
    static Path dataDir;
    private CapturedStandardError logged;
    private FencerServer server;
    private ManagedChannel channel;

    @BeforeAll
    void start() throws Exception {
        logged = CapturedStandardError.start();
        Path aclFile = dataDir.resolve("fencer.acl");
        Files.writeString(aclFile, RULES);
        server = FencerServer.start(TestServers.singlePeer(dataDir.resolve("data"), new ManualTicker())
                .withAcl(aclFile), TestIdentities.fromHeader());
        channel = TestServers.channel(server);
        TestServers.awaitServingAs(server, channel, "ops");
    }

    @AfterAll
    void stop() throws Exception {
        try {
            TestServers.close(channel);
            server.close();
        } finally {
            logged.close();
        }
    }

    @Test
    void grant_logsOneLineWithTokenSessionAndHolderIdentity_andTheWatchGrantedEventNamesTheHolder() throws Exception {
        Watching watch = Watching.start(channel, Watching.from("jobs/", 0, 0), TestIdentities.as("ops"));
        assertThat(watch.next().getKind()).isEqualTo(LockEvent.Kind.KIND_START);
        TestSession holder = TestServers.openSession(locksAs("worker-1"), TTL_MILLIS);

        FencingToken token = TestServers.acquire(locksAs("worker-1"), holder, "jobs/a", 0).getToken();
        LockEvent granted = watch.next();

        String line = "INFO io.fencer.server.grants - granted jobs/a#" + token.getValue() + " to session "
                + holder.id() + " (identity 'worker-1')";
        await().atMost(LOGGED_MAX).until(() -> logs().contains(line));
        assertThat(grantLines("jobs/a#" + token.getValue())).as("one line for the grant").hasSize(1);
        assertThat(granted.getKind()).isEqualTo(LockEvent.Kind.KIND_GRANTED);
        assertThat(granted.getToken().getValue()).isEqualTo(token.getValue());
        assertThat(granted.getSessionId()).isEqualTo(holder.id());
        assertThat(granted.getHolderIdentity()).isEqualTo("worker-1");
        watch.cancel();
    }

    @Test
    void storeRefusal_logsThePresentedToken_whichJoinsTheGrantLineNamingTheStaleHolder() throws Exception {
        TestSession first = TestServers.openSession(locksAs("worker-1"), TTL_MILLIS);
        TestSession second = TestServers.openSession(locksAs("worker-2"), TTL_MILLIS);
        FencingToken old = TestServers.acquire(locksAs("worker-1"), first, "jobs/b", 0).getToken();
        storeAs("worker-1").write(StoreTesting.put("jobs/b", old.getSequencer(), "k", "by worker-1"));
        TestServers.release(locksAs("worker-1"), first, old);
        FencingToken current = TestServers.acquire(locksAs("worker-2"), second, "jobs/b", 0).getToken();
        storeAs("worker-2").write(StoreTesting.put("jobs/b", current.getSequencer(), "k", "by worker-2"));

        // The paused holder writes again, three times: refused each time, logged once.
        List<ErrorDetail> refused = List.of(staleWrite(old), staleWrite(old), staleWrite(old));

        assertThat(refused).extracting(ErrorDetail::getReason).as("the stale writes were really made and refused")
                .containsOnly(Reason.REASON_STALE_TOKEN);
        Pattern refusal = Pattern.compile("INFO io\\.fencer\\.server\\.store\\.refusals - refused a write to scope"
                + " 'jobs/b' \\(stale_token\\): stale token (jobs/b#\\d+) refused");
        await().atMost(LOGGED_MAX).until(() -> refusal.matcher(logs()).find());
        Matcher refusalLine = refusal.matcher(logs());
        assertThat(refusalLine.find()).isTrue();
        String presented = refusalLine.group(1);
        assertThat(refusalLine.find()).as("a holder retrying a refused write logs one line per interval").isFalse();
        assertThat(presented).isEqualTo("jobs/b#" + old.getValue());
        assertThat(grantLines(presented)).as("the join: the refused token's grant line names its holder")
                .singleElement().asString().endsWith("to session " + first.id() + " (identity 'worker-1')");
        assertThat(grantLines("jobs/b#" + current.getValue())).as("control: the current grant names the other")
                .singleElement().asString().endsWith("to session " + second.id() + " (identity 'worker-2')");
    }

    private ErrorDetail staleWrite(FencingToken token) {
        return failure(() -> storeAs("worker-1").write(StoreTesting.put("jobs/b", token.getSequencer(), "k",
                "late")));
    }

    /** Returns the grants log's lines for exactly {@code token} ({@code jobs/a#3}, not {@code jobs/a#30}). */
    private List<String> grantLines(String token) {
        return logs().lines().filter(line -> line.contains("io.fencer.server.grants - granted " + token + " "))
                .toList();
    }

    private String logs() {
        return logged.text();
    }

    private LocksGrpc.LocksBlockingStub locksAs(String identity) {
        return TestServers.stub(channel).withInterceptors(TestIdentities.as(identity));
    }

    private StoreGrpc.StoreBlockingStub storeAs(String identity) {
        return StoreTesting.stub(channel).withInterceptors(TestIdentities.as(identity));
    }
}
