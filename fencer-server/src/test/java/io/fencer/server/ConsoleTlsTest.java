package io.fencer.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.awaitility.Awaitility.await;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
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
import io.fencer.server.tls.CertificateAuthority;
import io.fencer.testing.TestTls;
import io.grpc.ManagedChannel;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * The web console over TLS with client certificates required, each caller's identity its certificate's common name:
 * an identity with {@code read} sees the page, the locks and the events but is offered no revoke and refused one; an
 * identity with {@code admin} revokes; a caller without a certificate of the server's CA gets no connection at all.
 * The store's refused writes show to the identities that may read their scope, and to no other.
 * One server for the class (each test holds a lock of its own), so the class costs one start.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ConsoleTlsTest {
    private static final String RULES = """
            worker  lock  jobs/
            worker  read  jobs/
            worker  write jobs/
            auditor read  *
            viewer  read  reports/
            ops     admin *
            """;

    @TempDir
    static Path dir;
    private TestTls tls;
    private FencerServer server;
    private ManagedChannel workerChannel;

    @BeforeAll
    void start() throws Exception {
        tls = TestTls.create(dir.resolve("certs"));
        Path acl = dir.resolve("fencer.acl");
        Files.writeString(acl, RULES);
        server = FencerServer.start(TestServers.singlePeer(dir.resolve("data"), new ManualTicker()).withAcl(acl)
                .withTls(tls.serverFiles(true)).withHttpPort(0));
        workerChannel = tls.channel(server.port(), tls.client("worker"));
        ManagedChannel opsChannel = tls.channel(server.port(), tls.client("ops"));
        try {
            await().atMost(TestServers.STARTUP_MAX).pollInterval(Duration.ofMillis(20)).ignoreExceptions().until(() ->
                    server.isLeader() && io.fencer.api.v1.AdminGrpc.newBlockingStub(opsChannel)
                            .status(StatusRequest.getDefaultInstance()).getGroupFormatLevel() == 5);
        } finally {
            TestServers.close(opsChannel);
        }
    }

    @AfterAll
    void stop() throws Exception {
        if (workerChannel != null) {
            TestServers.close(workerChannel);
        }
        if (server != null) {
            server.close();
        }
    }

    @Test
    void console_withAReadCertificate_showsThePageLocksAndEventsButOffersNoRevokeAndRefusesOne403() throws Exception {
        HttpClient auditor = client(tls.client("auditor"));
        JsonObject start = post(auditor, "events", "{\"revision\": 0, \"ordinal\": 0}");
        FencingToken held = hold("jobs/read");

        HttpResponse<String> page = get(auditor, "/console");
        JsonObject state = post(auditor, "state", "{\"prefix\": \"jobs/read\"}");
        JsonObject events = post(auditor, "events", start.toString());
        HttpResponse<String> forged = send(auditor, "revoke", revokeBody(held));
        HttpResponse<String> connect = auditor.send(HttpRequest.newBuilder(URI.create(base()
                + "/fencer.v1.Locks/Revoke")).timeout(Duration.ofSeconds(20))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"lock\": \"jobs/read\"}")).build(),
                HttpResponse.BodyHandlers.ofString());

        assertThat(page.statusCode()).isEqualTo(200);
        assertThat(page.body()).contains("<script src=\"/console/console.js\" defer></script>");
        assertThat(state.get("identity").getAsString()).as("the certificate's name").isEqualTo("auditor");
        JsonObject lock = state.getAsJsonArray("locks").get(0).getAsJsonObject();
        assertThat(lock.get("lock").getAsString()).isEqualTo("jobs/read");
        assertThat(lock.get("token").getAsLong()).isEqualTo(held.getValue());
        assertThat(lock.get("canRevoke").getAsBoolean()).as("no revoke button without admin").isFalse();
        JsonObject granted = only(events.getAsJsonArray("events"), "granted", "jobs/read");
        assertThat(granted.get("token").getAsLong()).isEqualTo(held.getValue());
        assertThat(granted.get("holderIdentity").getAsString()).as("the holder's certificate's name")
                .isEqualTo("worker");
        assertThat(forged.statusCode()).as(forged.body()).isEqualTo(403);
        assertThat(error(forged).get("message").getAsString())
                .isEqualTo("permission denied: identity 'auditor' has no 'admin' permission on 'jobs/read'");
        assertThat(connect.statusCode()).as(connect.body()).isEqualTo(403);
        assertThat(holder("jobs/read")).as("the refused revokes changed nothing").isEqualTo(held.getValue());
    }

    @Test
    void console_withAnAdminCertificate_offersRevokeRevokesAndTheEventsNameTheRevoker() throws Exception {
        HttpClient ops = client(tls.client("ops"));
        JsonObject start = post(ops, "events", "{\"revision\": 0, \"ordinal\": 0}");
        FencingToken held = hold("jobs/admin");

        JsonObject state = post(ops, "state", "{\"prefix\": \"jobs/admin\"}");
        JsonObject revoked = post(ops, "revoke", revokeBody(held));
        JsonObject events = post(ops, "events", start.toString());

        assertThat(state.get("identity").getAsString()).isEqualTo("ops");
        assertThat(state.getAsJsonArray("locks").get(0).getAsJsonObject().get("canRevoke").getAsBoolean()).isTrue();
        assertThat(revoked.get("revoked").getAsString()).isEqualTo("jobs/admin#" + held.getValue());
        assertThat(holder("jobs/admin")).as("revoked, nobody waiting: the lock is free").isZero();
        JsonObject ended = only(events.getAsJsonArray("events"), "released", "jobs/admin");
        assertThat(ended.get("endCause").getAsString()).isEqualTo("revoked");
        assertThat(ended.get("revokedBy").getAsString()).isEqualTo("ops");
    }

    @Test
    void console_withoutACertificateOrWithAnotherCas_isRefusedAtTheHandshake() throws Exception {
        assertThat(get(client(tls.client("auditor")), "/console").statusCode()).as("control: a certificate of the CA")
                .isEqualTo(200);

        Throwable anonymous = catchThrowable(() -> get(client(null), "/console"));
        Throwable anonymousPost = catchThrowable(() -> send(client(null), "state", "{\"prefix\": \"\"}"));
        Throwable foreign = catchThrowable(() -> get(client(TestTls.foreignClient("ops")), "/console"));

        assertThat(anonymous).as("no client certificate").isInstanceOf(IOException.class);
        assertThat(anonymousPost).as("no client certificate, a JSON call").isInstanceOf(IOException.class);
        assertThat(foreign).as("a certificate named 'ops' of another CA").isInstanceOf(IOException.class);
    }

    @Test
    void refusals_ofAStaleWrite_showBothTokensToAReaderOfTheScopeAndNothingToAnIdentityWithoutReadOnIt()
            throws Exception {
        StoreGrpc.StoreBlockingStub store = StoreServiceTest.StoreTesting.stub(workerChannel);
        FencingToken first = heldAndReleased("jobs/stale");
        FencingToken second = hold("jobs/stale");
        store.write(StoreServiceTest.StoreTesting.put("jobs/stale", second.getSequencer(), "k", "by the holder"));
        ErrorDetail stale = TestServers.failure(() -> store.write(StoreServiceTest.StoreTesting.put("jobs/stale",
                first.getSequencer(), "k", "by the superseded holder")));
        // A refusal of a scope the viewer may read: the worker may not write there.
        ErrorDetail denied = TestServers.failure(() -> store.write(StoreServiceTest.StoreTesting.put(
                "reports/daily", second.getSequencer(), "k", "v")));

        JsonObject auditorSees = post(client(tls.client("auditor")), "refusals", "{\"prefix\": \"\", \"position\": 0}");
        JsonObject viewerSees = post(client(tls.client("viewer")), "refusals", "{\"prefix\": \"\", \"position\": 0}");
        JsonObject auditorAfter = post(client(tls.client("auditor")), "refusals",
                "{\"prefix\": \"\", \"position\": " + auditorSees.get("position").getAsLong() + "}");

        assertThat(stale.getReason()).as("control: the write was refused stale").isEqualTo(Reason.REASON_STALE_TOKEN);
        assertThat(denied.getReason()).as("control: refused for want of write").isEqualTo(Reason.REASON_PERMISSION_DENIED);
        JsonObject refused = onlyRefusal(auditorSees, "jobs/stale");
        assertThat(refused.get("reason").getAsString()).isEqualTo("stale_token");
        assertThat(refused.get("presented").getAsString()).isEqualTo("jobs/stale#" + first.getValue());
        assertThat(refused.get("accepted").getAsString()).isEqualTo("jobs/stale#" + second.getValue());
        assertThat(onlyRefusal(auditorSees, "reports/daily").get("reason").getAsString())
                .isEqualTo("permission_denied");
        assertThat(scopes(viewerSees)).as("read on reports/ only: the stale write to jobs/stale is not shown")
                .containsExactly("reports/daily");
        assertThat(viewerSees.toString()).doesNotContain("jobs/stale");
        assertThat(auditorAfter.getAsJsonArray("refusals")).as("from the position after the last: none").isEmpty();
    }

    private static JsonObject onlyRefusal(JsonObject answer, String scope) {
        List<JsonObject> found = new ArrayList<>();
        for (JsonElement refusal : answer.getAsJsonArray("refusals")) {
            if (refusal.getAsJsonObject().get("scope").getAsString().equals(scope)) {
                found.add(refusal.getAsJsonObject());
            }
        }
        assertThat(found).as("refusals of %s in %s", scope, answer).hasSize(1);
        return found.get(0);
    }

    private static List<String> scopes(JsonObject answer) {
        List<String> scopes = new ArrayList<>();
        answer.getAsJsonArray("refusals").forEach(refusal -> scopes.add(refusal.getAsJsonObject().get("scope")
                .getAsString()));
        return scopes;
    }

    /** Returns the token of a grant of {@code lock} to the identity 'worker', released since. */
    private FencingToken heldAndReleased(String lock) {
        LocksGrpc.LocksBlockingStub stub = TestServers.stub(workerChannel);
        TestSession session = TestServers.openSession(stub, 60_000);
        FencingToken token = TestServers.acquire(stub, session, lock, 0).getToken();
        TestServers.release(stub, session, token);
        return token;
    }

    /** Returns the token of a grant of {@code lock} to a session of the identity 'worker'. */
    private FencingToken hold(String lock) {
        LocksGrpc.LocksBlockingStub stub = TestServers.stub(workerChannel);
        TestSession session = TestServers.openSession(stub, 60_000);
        return TestServers.acquire(stub, session, lock, 0).getToken();
    }

    private long holder(String lock) {
        return TestServers.stub(workerChannel).describe(DescribeRequest.newBuilder().setLock(lock).build())
                .getHolder().getValue();
    }

    private static String revokeBody(FencingToken held) {
        return "{\"lock\": \"" + held.getLock() + "\", \"token\": " + held.getValue() + "}";
    }

    /** Returns the one event of {@code kind} of {@code lock} among {@code events}. */
    private static JsonObject only(JsonArray events, String kind, String lock) {
        List<JsonObject> found = new ArrayList<>();
        for (JsonElement event : events) {
            JsonObject object = event.getAsJsonObject();
            if (object.get("kind").getAsString().equals(kind) && object.get("lock").getAsString().equals(lock)) {
                found.add(object);
            }
        }
        assertThat(found).as("%s events of %s in %s", kind, lock, events).hasSize(1);
        return found.get(0);
    }

    private HttpClient client(CertificateAuthority.Issued certificate) {
        return HttpClient.newBuilder().sslContext(tls.jdkContext(certificate)).connectTimeout(Duration.ofSeconds(10))
                .build();
    }

    private String base() {
        return "https://127.0.0.1:" + server.httpPort();
    }

    private HttpResponse<String> get(HttpClient http, String path) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(base() + path)).timeout(Duration.ofSeconds(20)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private JsonObject post(HttpClient http, String route, String body) throws Exception {
        HttpResponse<String> response = send(http, route, body);
        assertThat(response.statusCode()).as(response.body()).isEqualTo(200);
        return JsonParser.parseString(response.body()).getAsJsonObject();
    }

    private HttpResponse<String> send(HttpClient http, String route, String body) throws Exception {
        return http.send(HttpRequest.newBuilder(URI.create(base() + "/console/" + route))
                .timeout(Duration.ofSeconds(20)).header("Content-Type", "application/json")
                .header("X-Fencer-Console", "1").POST(HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private static JsonObject error(HttpResponse<String> response) {
        return JsonParser.parseString(response.body()).getAsJsonObject().getAsJsonObject("error");
    }
}
