package io.fencer.server;

import static io.fencer.server.TestServers.failure;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.protobuf.ByteString;
import io.fencer.api.v1.AbortUnitRequest;
import io.fencer.api.v1.BeginUnitRequest;
import io.fencer.api.v1.CommitUnitRequest;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.GetRequest;
import io.fencer.api.v1.Reason;
import io.fencer.api.v1.StoreGrpc;
import io.fencer.api.v1.UnitWriteRequest;
import io.fencer.core.FencingToken;
import io.fencer.core.Sequencer;
import io.fencer.server.StoreServiceTest.StoreTesting;
import io.fencer.server.rpc.TestIdentities;
import io.grpc.ManagedChannel;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The store server alone with {@code --acl}: writes, units and reads by scope prefix, reload, metrics. */
class StoreServerAccessControlTest {
    @TempDir
    Path dataDir;
    private Path aclFile;
    private FencerStoreServer server;
    private ManagedChannel channel;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    @BeforeEach
    void start() throws Exception {
        aclFile = dataDir.resolve("store.acl");
        Files.writeString(aclFile, "writer write jobs/\nreader read *\n");
        server = FencerStoreServer.start(StoreServerConfig.defaults(dataDir.resolve("data")).withPorts(0, 0)
                .withAcl(aclFile), TestIdentities.fromHeader());
        channel = TestServers.channel(server.port());
    }

    @AfterEach
    void stop() throws Exception {
        TestServers.close(channel);
        server.close();
    }

    @Test
    void writeAndUnits_writeOnJobsPrefix_allowedOnJobsScopeAndDeniedElsewhereAndForReaders() throws Exception {
        String jobs = Sequencer.format(new FencingToken("jobs/x", 3));
        String db = Sequencer.format(new FencingToken("db/x", 3));

        long accepted = store("writer").write(StoreTesting.put("jobs/x", jobs, "k", "v")).getAccepted();
        String unit = store("writer").beginUnit(BeginUnitRequest.newBuilder().setScope("jobs/x").setSequencer(jobs)
                .setTimeoutMillis(10_000).build()).getUnitId();
        ErrorDetail readerUnitWrite = failure(() -> store("reader").unitWrite(UnitWriteRequest.newBuilder()
                .setUnitId(unit).addOps(StoreTesting.putOp("u", new byte[] {1})).build()));
        ErrorDetail readerCommit = failure(() -> store("reader").commitUnit(CommitUnitRequest.newBuilder()
                .setUnitId(unit).build()));
        ErrorDetail dbWrite = failure(() -> store("writer").write(StoreTesting.put("db/x", db, "k", "v")));
        ErrorDetail dbUnit = failure(() -> store("writer").beginUnit(BeginUnitRequest.newBuilder().setScope("db/x")
                .setSequencer(db).setTimeoutMillis(10_000).build()));
        ErrorDetail readerWrite = failure(() -> store("reader").write(StoreTesting.put("jobs/x", jobs, "k", "w")));

        assertThat(accepted).isEqualTo(3);
        assertDenied(readerUnitWrite, "reader", "write", unit); // not its scope, which the reader may not learn
        assertDenied(readerCommit, "reader", "write", unit);
        assertDenied(dbWrite, "writer", "write", "db/x");
        assertDenied(dbUnit, "writer", "write", "db/x");
        assertDenied(readerWrite, "reader", "write", "jobs/x");
        assertThat(store("reader").get(get("jobs/x", "k")).getValue().toStringUtf8()).isEqualTo("v");
        assertThat(store("reader").get(get("db/x", "k")).getFound()).isFalse();
        assertDenied(failure(() -> store("anonymous").get(get("jobs/x", "k"))), "anonymous", "read", "jobs/x");
        assertThat(metrics()).contains("fencer_calls_refused_total{reason=\"permission_denied\"} 6.0");
    }

    @Test
    void reloadAcl_grantAdded_allowsTheWriteDeniedBefore() throws Exception {
        String db = Sequencer.format(new FencingToken("db/y", 1));
        assertDenied(failure(() -> store("writer").write(StoreTesting.put("db/y", db, "k", "v"))), "writer", "write",
                "db/y");

        Files.writeString(aclFile, "writer write jobs/\nwriter write db/\n");
        server.reloadAcl();

        assertThat(store("writer").write(StoreTesting.put("db/y", db, "k", "v")).getAccepted()).isEqualTo(1);
        assertDenied(failure(() -> store("reader").get(get("db/y", "k"))), "reader", "read", "db/y");
    }

    /**
     * Regression: one identity could keep all of a store's open units (10,000) for a unit's timeout and leave every
     * other client refused. Here the ACL file gives {@code writer} a quota of 2.
     */
    @Test
    void beginUnit_overUnitsQuota_refusedNamingIdentityAndQuota_whileAnotherIdentityIsServed() throws Exception {
        Files.writeString(aclFile, "writer write jobs/\nother write jobs/\nwriter quota units 2\n");
        server.reloadAcl();
        String first = beginUnit("writer", "jobs/a");
        beginUnit("writer", "jobs/b");

        ErrorDetail refused = failure(() -> beginUnit("writer", "jobs/c"));
        String others = beginUnit("other", "jobs/c");
        store("writer").commitUnit(CommitUnitRequest.newBuilder().setUnitId(first).build());
        String afterCommit = beginUnit("writer", "jobs/d");

        assertThat(refused.getReason()).isEqualTo(Reason.REASON_LIMIT_EXCEEDED);
        assertThat(refused.getIdentity()).isEqualTo("writer");
        assertThat(refused.getLimit()).isEqualTo("unitsPerIdentityMax");
        assertThat(refused.getLimitValue()).isEqualTo(2);
        assertThat(refused.getMessage()).contains("'writer' has 2 units open", "unitsPerIdentityMax of 2");
        assertThat(others).as("another identity is served").isNotEmpty();
        assertThat(afterCommit).as("a committed unit leaves the count").isNotEmpty();
    }

    /**
     * Regression: a unit call looked the unit up before it checked the caller's permission, so a caller without
     * {@code write} on the unit's scope learnt whether an id named a unit (PERMISSION_DENIED naming its scope) or
     * not (INVALID_ARGUMENT "unknown"; for AbortUnit, an answer). Now both answers are one refusal.
     */
    @Test
    void unitCalls_withoutWriteOnTheScope_answerAnExistingAndAnUnknownUnitAlike() throws Exception {
        String unit = beginUnit("writer", "jobs/x");
        String unknown = "AAAAAAAAAAAAAAAAAAAAAA"; // the form of an id the store issues, which it did not issue

        for (String call : new String[] {"UnitWrite", "CommitUnit", "AbortUnit"}) {
            String existing = unitCall("reader", call, unit).replace(unit, "ID");
            String none = unitCall("reader", call, unknown).replace(unknown, "ID");
            assertThat(existing).as("%s of an existing and of an unknown unit", call).isEqualTo(none)
                    .contains("REASON_PERMISSION_DENIED", "identity: \"reader\"", "permission: \"write\"")
                    .doesNotContain("jobs/x");
        }
        assertThat(store("writer").commitUnit(CommitUnitRequest.newBuilder().setUnitId(unit).build())
                .getAccepted()).as("the refused calls left the unit as it was").isEqualTo(3);
    }

    /**
     * Regression: a unit id worked as a bearer secret, so any identity with {@code write} on the scope that learnt
     * the id (from a log line, a trace) could write into another identity's unit, commit it or abort it.
     */
    @Test
    void unitCalls_byAnotherIdentityWithWriteOnTheScope_areRefusedAndTheUnitIsUntouched() throws Exception {
        Files.writeString(aclFile, "writer write jobs/\nother write jobs/\n");
        server.reloadAcl();
        String unit = beginUnit("writer", "jobs/x");
        store("writer").unitWrite(UnitWriteRequest.newBuilder().setUnitId(unit)
                .addOps(StoreTesting.putOp("mine", new byte[] {1})).build());

        ErrorDetail write = failure(() -> store("other").unitWrite(UnitWriteRequest.newBuilder().setUnitId(unit)
                .addOps(StoreTesting.putOp("theirs", new byte[] {2})).build()));
        ErrorDetail commit = failure(() -> store("other").commitUnit(CommitUnitRequest.newBuilder().setUnitId(unit)
                .build()));
        ErrorDetail abort = failure(() -> store("other").abortUnit(AbortUnitRequest.newBuilder().setUnitId(unit)
                .build()));
        long opsApplied = store("writer").commitUnit(CommitUnitRequest.newBuilder().setUnitId(unit).build())
                .getOpsApplied();

        for (ErrorDetail refused : new ErrorDetail[] {write, commit, abort}) {
            assertDenied(refused, "other", "write", unit);
            assertThat(refused.getMessage()).contains("only the identity that began it").doesNotContain("writer");
        }
        assertThat(opsApplied).as("only the owner's op, in a unit neither committed nor aborted by another")
                .isEqualTo(1);
        assertThat(store("writer").get(get("jobs/x", "theirs")).getFound()).isFalse();
    }

    /**
     * Regression: a unit id was taken as it came, of any length or characters (up to the request's 5 MiB), looked
     * up, and under an ACL echoed whole in the refusal's detail; now an id that cannot be one the store issues is
     * refused as malformed, naming it (truncated, its characters escaped), before anything is looked up.
     */
    @Test
    void unitCalls_unitIdOfOddLengthOrCharacters_areRefusedInvalidArgumentNamingIt() throws Exception {
        String longId = "A".repeat(100_000);
        for (String call : new String[] {"UnitWrite", "CommitUnit", "AbortUnit"}) {
            ErrorDetail tooLong = failure(unitRequest("writer", call, longId));
            ErrorDetail odd = failure(unitRequest("writer", call, "../a\nb"));
            ErrorDetail empty = failure(unitRequest("writer", call, ""));

            for (ErrorDetail refused : new ErrorDetail[] {tooLong, odd, empty}) {
                assertThat(refused.getReason()).as(call).isEqualTo(Reason.REASON_INVALID_ARGUMENT);
                assertThat(refused.getField()).as(call).isEqualTo("unit_id");
            }
            assertThat(tooLong.getMessage()).as(call).contains("unit_id of 100000 characters is not a unit id")
                    .hasSizeLessThan(1_000);
            assertThat(tooLong.getValue()).as(call).hasSizeLessThan(400);
            assertThat(odd.getMessage()).as(call).contains("unit_id '../a\\u000ab' is not a unit id", "'.'");
            assertThat(odd.getValue()).as(call).isEqualTo("../a\nb");
            assertThat(empty.getMessage()).as(call).contains("unit_id is empty");
        }
    }

    /** Answers a unit call of {@code identity} as text: its response, or its error's detail. */
    private String unitCall(String identity, String call, String unitId) {
        StringBuilder answer = new StringBuilder();
        try {
            unitRequest(identity, call, unitId, answer).run();
        } catch (io.grpc.StatusRuntimeException e) {
            return TestServers.detail(e).toString();
        }
        return answer.toString();
    }

    private Runnable unitRequest(String identity, String call, String unitId) {
        return unitRequest(identity, call, unitId, new StringBuilder());
    }

    /** Returns the unit call {@code call} of {@code identity}, which appends its response to {@code answer}. */
    private Runnable unitRequest(String identity, String call, String unitId, StringBuilder answer) {
        return () -> {
            Object response = switch (call) {
                case "UnitWrite" -> store(identity).unitWrite(UnitWriteRequest.newBuilder().setUnitId(unitId)
                        .addOps(StoreTesting.putOp("k", new byte[] {1})).build());
                case "CommitUnit" -> store(identity).commitUnit(CommitUnitRequest.newBuilder().setUnitId(unitId)
                        .build());
                case "AbortUnit" -> store(identity).abortUnit(AbortUnitRequest.newBuilder().setUnitId(unitId)
                        .build());
                default -> throw new IllegalArgumentException(call);
            };
            answer.append(response);
        };
    }

    private String beginUnit(String identity, String scope) {
        return store(identity).beginUnit(BeginUnitRequest.newBuilder().setScope(scope)
                .setSequencer(Sequencer.format(new FencingToken(scope, 3))).setTimeoutMillis(10_000).build())
                .getUnitId();
    }

    private static void assertDenied(ErrorDetail detail, String identity, String permission, String scope) {
        assertThat(detail.getReason()).isEqualTo(Reason.REASON_PERMISSION_DENIED);
        assertThat(detail.getIdentity()).isEqualTo(identity);
        assertThat(detail.getPermission()).isEqualTo(permission);
        assertThat(detail.getLock()).isEqualTo(scope);
    }

    private StoreGrpc.StoreBlockingStub store(String identity) {
        StoreGrpc.StoreBlockingStub stub = StoreTesting.stub(channel);
        return identity.equals("anonymous") ? stub : stub.withInterceptors(TestIdentities.as(identity));
    }

    private static GetRequest get(String scope, String key) {
        return GetRequest.newBuilder().setScope(scope).setKey(ByteString.copyFromUtf8(key)).build();
    }

    private String metrics() throws Exception {
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.adminPort()
                + "/metrics")).timeout(Duration.ofSeconds(10)).build();
        return http.send(request, HttpResponse.BodyHandlers.ofString()).body();
    }
}
