package io.fencer.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.fencer.api.v1.DescribeRequest;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.FencingToken;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.Reason;
import io.fencer.api.v1.StatusRequest;
import io.fencer.api.v1.StoreGrpc;
import io.fencer.core.ManualTicker;
import io.fencer.server.TestServers.TestSession;
import io.fencer.testing.FencerTestCluster;
import io.grpc.ManagedChannel;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The web console's calls on a real server's HTTP port, plain HTTP (every caller anonymous): what an identity without
 * {@code admin} is offered and refused, what one with it may do, and the page's own headers.
 */
class ConsoleTest {
    @TempDir
    Path dir;
    private FencerServer server;
    private ManagedChannel channel;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    @AfterEach
    void stop() throws Exception {
        if (channel != null) {
            TestServers.close(channel);
        }
        if (server != null) {
            server.close();
        }
    }

    @Test
    void revoke_byAnIdentityWithoutAdmin_offersNoButtonAndAForgedPostIsPermissionDeniedAndTheHolderKeepsTheLock()
            throws Exception {
        FencingToken held = startHolding("anonymous lock jobs/\nanonymous read *\n");

        JsonObject state = post("state", "{\"prefix\": \"\"}", true);
        HttpResponse<String> forged = send("revoke", "{\"lock\": \"jobs/a\", \"token\": " + held.getValue() + "}",
                true);
        HttpResponse<String> connect = http.send(HttpRequest.newBuilder(URI.create(base()
                + "/fencer.v1.Locks/Revoke")).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"lock\": \"jobs/a\"}")).build(),
                HttpResponse.BodyHandlers.ofString());

        JsonObject lock = state.getAsJsonArray("locks").get(0).getAsJsonObject();
        assertThat(lock.get("lock").getAsString()).isEqualTo("jobs/a");
        assertThat(lock.get("token").getAsLong()).isEqualTo(held.getValue());
        assertThat(lock.get("canRevoke").getAsBoolean()).as("no revoke button without admin").isFalse();
        assertThat(forged.statusCode()).isEqualTo(403);
        assertThat(error(forged).get("code").getAsString()).isEqualTo("permission_denied");
        assertThat(error(forged).get("message").getAsString())
                .isEqualTo("permission denied: identity 'anonymous' has no 'admin' permission on 'jobs/a'");
        assertThat(connect.statusCode()).as(connect.body()).isEqualTo(403);
        assertThat(holder("jobs/a")).as("the forged revokes changed nothing").isEqualTo(held.getValue());
    }

    @Test
    void revoke_withoutTheConsoleHeader_isRefusedBeforeAnyCall() throws Exception {
        FencingToken held = startHolding("anonymous admin *\n");

        HttpResponse<String> crossSite = send("revoke", "{\"lock\": \"jobs/a\", \"token\": 0}", false);

        assertThat(crossSite.statusCode()).isEqualTo(403);
        assertThat(error(crossSite).get("message").getAsString()).contains("X-Fencer-Console");
        assertThat(holder("jobs/a")).isEqualTo(held.getValue());
    }

    @Test
    void revoke_withATokenThatIsNoNonNegativeInteger_isInvalidArgumentAndTheHolderKeepsTheLock() throws Exception {
        FencingToken held = startHolding("anonymous admin *\n");
        // The token names the grant to end, and 0 "whichever holds the lock": a token the console cannot read must
        // be refused, never read as 0 (or as another token, 2^64 + 1 as 1) and end a grant the caller did not name.
        for (String token : java.util.List.of("-1", "\"12x\"", "1.5", "18446744073709551617", "1e400", "true")) {
            HttpResponse<String> refused = send("revoke", "{\"lock\": \"jobs/a\", \"token\": " + token + "}", true);

            assertThat(refused.statusCode()).as("token %s: %s", token, refused.body()).isEqualTo(400);
            assertThat(error(refused).get("code").getAsString()).isEqualTo("invalid_argument");
            assertThat(error(refused).get("message").getAsString()).contains("token");
            assertThat(holder("jobs/a")).as("after token %s", token).isEqualTo(held.getValue());
        }
    }

    @Test
    void revoke_byAdmin_offersTheButtonRevokesAndTheEventsNameTheRevoker() throws Exception {
        FencingToken held = startHolding("anonymous admin *\n");
        JsonObject start = post("events", "{\"revision\": 0, \"ordinal\": 0}", true);

        JsonObject state = post("state", "{\"prefix\": \"jobs/\"}", true);
        JsonObject revoked = post("revoke", "{\"lock\": \"jobs/a\", \"token\": " + held.getValue() + "}", true);
        JsonObject events = post("events", start.toString(), true);

        JsonObject lock = state.getAsJsonArray("locks").get(0).getAsJsonObject();
        assertThat(lock.get("canRevoke").getAsBoolean()).isTrue();
        assertThat(lock.get("leaseRemainingMillis").getAsLong()).as("the holder's lease, known").isNotNegative();
        assertThat(state.get("identity").getAsString()).isEqualTo("anonymous");
        assertThat(state.getAsJsonObject("peer").get("leader").getAsBoolean()).isTrue();
        assertThat(state.getAsJsonArray("peers")).hasSize(1);
        assertThat(revoked.get("revoked").getAsString()).isEqualTo("jobs/a#" + held.getValue());
        JsonArray list = events.getAsJsonArray("events");
        JsonObject ended = list.get(list.size() - 1).getAsJsonObject();
        assertThat(ended.get("kind").getAsString()).isEqualTo("released");
        assertThat(ended.get("endCause").getAsString()).isEqualTo("revoked");
        assertThat(ended.get("revokedBy").getAsString()).isEqualTo("anonymous");
        assertThat(ended.get("revision").getAsLong()).isGreaterThanOrEqualTo(start.get("revision").getAsLong());
        assertThat(events.get("revision").getAsLong()).as("the next poll's position: after the last event")
                .isEqualTo(ended.get("revision").getAsLong());
        assertThat(events.get("ordinal").getAsInt()).isEqualTo(ended.get("ordinal").getAsInt() + 1);
    }

    @Test
    void state_ofALockWithALongQueue_namesTheFirstWaitersAndCountsAll() throws Exception {
        startHolding("anonymous admin *\n");
        LocksGrpc.LocksFutureStub waits = LocksGrpc.newFutureStub(channel).withDeadlineAfter(60,
                java.util.concurrent.TimeUnit.SECONDS);
        int shown = 20; // the console's WAITERS_SHOWN_MAX
        int waiters = shown + 5;
        for (int i = 0; i < waiters; i++) {
            waits.acquire(TestServers.acquireRequest(TestServers.openSession(TestServers.stub(channel), 60_000),
                    "jobs/a", "w" + i, 50_000));
        }
        await().atMost(Duration.ofSeconds(30)).until(() -> TestServers.stub(channel).describe(DescribeRequest
                .newBuilder().setLock("jobs/a").build()).getWaitersTotal() == waiters);

        JsonObject lock = post("state", "{\"prefix\": \"jobs/\"}", true).getAsJsonArray("locks").get(0)
                .getAsJsonObject();

        assertThat(lock.getAsJsonArray("waiters")).hasSize(shown);
        assertThat(lock.get("waitersTotal").getAsInt()).isEqualTo(waiters);
    }

    @Test
    void state_ofMoreLocksThanItShows_saysSo() throws Exception {
        startHolding("anonymous admin *\n");
        TestSession session = TestServers.openSession(TestServers.stub(channel), 60_000);
        for (int first = 0; first < 256; first += 64) {
            assertThat(TestServers.stub(channel).acquireAll(TestServers.acquireAllRequest(session, "many-" + first, 0,
                    i -> String.format(java.util.Locale.ROOT, "many/%03d", i), first, first + 64)).getAcquired())
                    .isTrue();
        }

        JsonObject all = post("state", "{\"prefix\": \"\"}", true);
        JsonObject jobs = post("state", "{\"prefix\": \"jobs/\"}", true);

        assertThat(all.getAsJsonArray("locks")).hasSize(200);
        assertThat(all.get("locksMore").getAsBoolean()).isTrue();
        assertThat(jobs.getAsJsonArray("locks")).hasSize(1);
        assertThat(jobs.get("locksMore").getAsBoolean()).isFalse();
    }

    @Test
    void refusals_ofAStaleWrite_areInTheConsolesJsonWithThePresentedAndAcceptedTokens() throws Exception {
        startHolding("anonymous admin *\n");
        LocksGrpc.LocksBlockingStub locks = TestServers.stub(channel);
        StoreGrpc.StoreBlockingStub store = StoreServiceTest.StoreTesting.stub(channel);
        TestSession superseded = TestServers.openSession(locks, 60_000);
        FencingToken first = TestServers.acquire(locks, superseded, "orders", 0).getToken();
        TestServers.release(locks, superseded, first);
        FencingToken second = TestServers.acquire(locks, TestServers.openSession(locks, 60_000), "orders", 0)
                .getToken();
        store.write(StoreServiceTest.StoreTesting.put("orders", second.getSequencer(), "k", "by the holder"));
        ErrorDetail stale = TestServers.failure(() -> store.write(StoreServiceTest.StoreTesting.put("orders",
                first.getSequencer(), "k", "by the superseded holder")));

        JsonObject all = post("refusals", "{\"prefix\": \"\", \"position\": 0}", true);
        JsonObject otherPrefix = post("refusals", "{\"prefix\": \"jobs/\", \"position\": 0}", true);
        JsonObject after = post("refusals", "{\"prefix\": \"\", \"position\": "
                + all.get("position").getAsLong() + "}", true);

        assertThat(stale.getReason()).as("control: the write was refused stale").isEqualTo(Reason.REASON_STALE_TOKEN);
        assertThat(all.get("store").getAsBoolean()).isTrue();
        JsonArray refusals = all.getAsJsonArray("refusals");
        assertThat(refusals).as("one refusal: %s", all).hasSize(1);
        JsonObject refused = refusals.get(0).getAsJsonObject();
        assertThat(refused.get("scope").getAsString()).isEqualTo("orders");
        assertThat(refused.get("reason").getAsString()).isEqualTo("stale_token");
        assertThat(refused.get("presented").getAsString()).isEqualTo("orders#" + first.getValue());
        assertThat(refused.get("accepted").getAsString()).isEqualTo("orders#" + second.getValue());
        assertThat(refused.get("ageMillis").getAsLong()).isNotNegative();
        assertThat(refused.toString()).as("no value is shown").doesNotContain("superseded holder");
        assertThat(all.get("position").getAsLong()).isEqualTo(refused.get("position").getAsLong() + 1);
        assertThat(otherPrefix.getAsJsonArray("refusals")).as("the page's prefix filters refusals too").isEmpty();
        assertThat(after.getAsJsonArray("refusals")).as("from the position after the last: none").isEmpty();
    }

    @Test
    void state_ofAPeerTheLeaderHasNotHeardFromSinceItsElection_showsItsMatchIndexAsUnknown() throws Exception {
        try (FencerTestCluster group = FencerTestCluster.builder(dir).peers(3).config(c -> c.withHttpPort(0))
                .start()) {
            int firstLeader = group.leaderIndex();
            int down = (firstLeader + 1) % 3;
            // stop a follower, then make the group elect a leader anew: the new leader never hears from it
            group.stop(down);
            group.stop(firstLeader);
            group.restart(firstLeader);
            int leader = group.leaderIndex();
            int up = IntStream.range(0, 3).filter(i -> i != down && i != leader).findFirst().orElseThrow();
            String leaderBase = "http://127.0.0.1:" + group.server(leader).httpPort();
            await().atMost(TestServers.STARTUP_MAX).ignoreExceptions().until(() -> peer(post(leaderBase, "state",
                    "{\"prefix\": \"\"}"), group.id(up)).get("matchIndex").isJsonPrimitive());

            JsonObject state = post(leaderBase, "state", "{\"prefix\": \"\"}");

            JsonObject unknown = peer(state, group.id(down));
            assertThat(unknown.has("matchIndex")).as("what the leader does not know: %s", unknown).isFalse();
            assertThat(unknown.get("id").getAsString()).isEqualTo(group.id(down));
            assertThat(peer(state, group.id(up)).get("matchIndex").getAsLong()).isNotNegative();
        }
    }

    private static JsonObject peer(JsonObject state, String id) {
        for (var peer : state.getAsJsonArray("peers")) {
            if (peer.getAsJsonObject().get("id").getAsString().equals(id)) {
                return peer.getAsJsonObject();
            }
        }
        throw new AssertionError("no peer " + id + " in " + state);
    }

    @Test
    void page_isServedWithAPolicyThatRunsOnlyItsOwnScript() throws Exception {
        startHolding("anonymous admin *\n");

        HttpResponse<String> page = http.send(HttpRequest.newBuilder(URI.create(base() + "/console")).build(),
                HttpResponse.BodyHandlers.ofString());
        HttpResponse<String> script = http.send(HttpRequest.newBuilder(URI.create(base() + "/console/console.js"))
                .build(), HttpResponse.BodyHandlers.ofString());

        assertThat(page.statusCode()).isEqualTo(200);
        assertThat(page.headers().firstValue("Content-Security-Policy").orElseThrow())
                .contains("default-src 'self'");
        assertThat(page.body()).contains("<script src=\"/console/console.js\" defer></script>");
        assertThat(script.body()).contains("textContent").doesNotContain("innerHTML");
    }

    /** Starts a server with {@code rules} and a session holding {@code jobs/a}; returns its token. */
    private FencingToken startHolding(String rules) throws Exception {
        Path acl = dir.resolve("fencer.acl");
        Files.writeString(acl, rules + "operator admin *\n");
        server = FencerServer.start(TestServers.singlePeer(dir.resolve("data"), new ManualTicker()).withAcl(acl)
                .withHttpPort(0));
        channel = TestServers.channel(server);
        LocksGrpc.LocksBlockingStub stub = TestServers.stub(channel);
        await().atMost(TestServers.STARTUP_MAX).pollInterval(Duration.ofMillis(20)).ignoreExceptions().until(() ->
                server.isLeader() && io.fencer.api.v1.AdminGrpc.newBlockingStub(channel)
                        .status(StatusRequest.getDefaultInstance()).getGroupFormatLevel() == 5);
        TestSession session = TestServers.openSession(stub, 60_000);
        return TestServers.acquire(stub, session, "jobs/a", 0).getToken();
    }

    private long holder(String lock) {
        return TestServers.stub(channel).describe(DescribeRequest.newBuilder().setLock(lock).build()).getHolder()
                .getValue();
    }

    private String base() {
        return "http://127.0.0.1:" + server.httpPort();
    }

    private JsonObject post(String route, String body, boolean header) throws Exception {
        HttpResponse<String> response = send(base(), route, body, header);
        assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
        return JsonParser.parseString(response.body()).getAsJsonObject();
    }

    private JsonObject post(String base, String route, String body) throws Exception {
        HttpResponse<String> response = send(base, route, body, true);
        assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
        return JsonParser.parseString(response.body()).getAsJsonObject();
    }

    private HttpResponse<String> send(String route, String body, boolean header) throws Exception {
        return send(base(), route, body, header);
    }

    private HttpResponse<String> send(String base, String route, String body, boolean header) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(base + "/console/" + route))
                .timeout(Duration.ofSeconds(20)).header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body));
        if (header) {
            request.header("X-Fencer-Console", "1");
        }
        return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    private static JsonObject error(HttpResponse<String> response) {
        return JsonParser.parseString(response.body()).getAsJsonObject().getAsJsonObject("error");
    }
}
