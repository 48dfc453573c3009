package io.fencer.server;

import static io.fencer.server.TestServers.collecting;
import static io.fencer.server.TestServers.detail;
import static io.fencer.server.TestServers.failure;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;
import static org.awaitility.Awaitility.await;

import com.google.protobuf.ByteString;
import io.fencer.api.v1.AcquireRequest;
import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.AdminGrpc;
import io.fencer.api.v1.BackupRequest;
import io.fencer.api.v1.CallError;
import io.fencer.api.v1.CloseSessionRequest;
import io.fencer.api.v1.CreateScopeRequest;
import io.fencer.api.v1.DescribeRequest;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.FenceRequest;
import io.fencer.api.v1.FencingToken;
import io.fencer.api.v1.GetRequest;
import io.fencer.api.v1.KeepAliveRequest;
import io.fencer.api.v1.KeepAliveResponse;
import io.fencer.api.v1.ListRequest;
import io.fencer.api.v1.ListResponse;
import io.fencer.api.v1.LockInfo;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.OpenSessionRequest;
import io.fencer.api.v1.PipelineRequest;
import io.fencer.api.v1.PipelineResponse;
import io.fencer.api.v1.Policy;
import io.fencer.api.v1.Reason;
import io.fencer.api.v1.ReleaseRequest;
import io.fencer.api.v1.StatusRequest;
import io.fencer.api.v1.StoreGrpc;
import io.fencer.api.v1.StorePipelineRequest;
import io.fencer.api.v1.StorePipelineResponse;
import io.fencer.api.v1.ValidateRequest;
import io.fencer.api.v1.ValidateResponse;
import io.fencer.api.v1.WriteRequest;
import io.fencer.core.ManualTicker;
import io.fencer.server.StoreServiceTest.StoreTesting;
import io.fencer.server.auth.AclFileException;
import io.fencer.server.TestServers.TestSession;
import io.fencer.server.rpc.TestIdentities;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Per-prefix ACLs on a real server (real Ratis, real gRPC, the hosted store on real RocksDB). Callers are named by
 * {@link TestIdentities}, the tests' stand-in for client certificates, in the context key the handlers read.
 */
class AccessControlTest {
    private static final long TTL_MILLIS = 60_000;
    private static final String RULES = """
            # who may do what
            scheduler lock  jobs/
            auditor   read  jobs/
            writer    write jobs/    # store writes; includes reads
            ops       admin *
            """;

    @TempDir
    Path dataDir;
    private Path aclFile;
    private FencerServer server;
    private ManagedChannel channel;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

    @BeforeEach
    void start() throws Exception {
        aclFile = dataDir.resolve("fencer.acl");
        Files.writeString(aclFile, RULES);
        server = FencerServer.start(TestServers.singlePeer(dataDir.resolve("data"), new ManualTicker())
                .withAcl(aclFile), TestIdentities.fromHeader());
        channel = TestServers.channel(server);
        await().atMost(TestServers.STARTUP_MAX).pollInterval(Duration.ofMillis(20)).ignoreExceptions().until(() -> {
            locksAs("ops").describe(DescribeRequest.newBuilder().setLock("warm-up").build());
            return server.isLeader() && keepAlive("ops", new TestSession(Long.MAX_VALUE, "")).getExpired()
                    && adminAs("ops").status(StatusRequest.getDefaultInstance()).getGroupFormatLevel() == 5;
        });
    }

    @AfterEach
    void stop() throws Exception {
        TestServers.close(channel);
        server.close();
    }

    @Test
    void acquire_lockOnJobsPrefix_grantsJobsNameAndDeniesOtherNamingIdentityPermissionAndName() {
        TestSession session = openSession("scheduler");

        boolean acquired = acquire("scheduler", session, "jobs/a").getAcquired();
        StatusRuntimeException denied = deniedCall(() -> acquire("scheduler", session, "other"));

        assertThat(acquired).isTrue();
        assertThat(denied.getStatus().getCode()).isEqualTo(Status.Code.PERMISSION_DENIED);
        assertThat(denied.getStatus().getDescription())
                .isEqualTo("permission denied: identity 'scheduler' has no 'lock' permission on 'other'");
        assertDenied(detail(denied), "scheduler", "lock", "other");
        assertThat(describe("other").hasHolder()).as("the denied acquire took nothing").isFalse();
    }

    @Test
    void describeAndValidate_readOnJobsPrefix_answerWhileAcquireOpenSessionAndOtherNamesAreDenied() {
        TestSession session = openSession("scheduler");
        FencingToken token = acquire("scheduler", session, "jobs/b").getToken();

        LockInfo described = locksAs("auditor").describe(DescribeRequest.newBuilder().setLock("jobs/b").build());
        ValidateResponse validated = locksAs("auditor").validate(ValidateRequest.newBuilder().setToken(token)
                .build());

        assertThat(described.getHolder().getValue()).isEqualTo(token.getValue());
        assertThat(validated.getStatus()).isEqualTo(ValidateResponse.Status.CURRENT);
        assertDenied(failure(() -> acquire("auditor", session, "jobs/b")), "auditor", "lock", "jobs/b");
        assertDenied(failure(() -> openSession("auditor")), "auditor", "lock", "");
        assertDenied(failure(() -> locksAs("auditor").describe(DescribeRequest.newBuilder().setLock("other")
                .build())), "auditor", "read", "other");
        assertDenied(failure(() -> locksAs("auditor").release(ReleaseRequest.newBuilder().setToken(token).build())),
                "auditor", "lock", "jobs/b");
        assertThat(describe("jobs/b").getHolder().getValue()).as("the denied release freed nothing")
                .isEqualTo(token.getValue());
    }

    @Test
    void backup_withoutAdminOnEveryName_deniedWhileAdminGetsAWholeFile() throws Exception {
        acquire("scheduler", openSession("scheduler"), "jobs/e");

        StatusRuntimeException auditor = deniedCall(() -> adminAs("auditor").backup(BackupRequest.getDefaultInstance())
                .forEachRemaining(chunk -> { }));
        java.io.ByteArrayOutputStream file = new java.io.ByteArrayOutputStream();
        adminAs("ops").backup(BackupRequest.getDefaultInstance()).forEachRemaining(chunk -> file.writeBytes(
                chunk.getData().toByteArray()));
        io.fencer.lock.BackupFile.Contents contents = io.fencer.lock.BackupFile.read(file.toByteArray(),
                io.fencer.lock.BackupFile.Kind.BACKUP, "backup", io.fencer.lock.Limits.DEFAULT);

        assertThat(auditor.getStatus().getCode()).isEqualTo(Status.Code.PERMISSION_DENIED);
        assertThat(auditor.getStatus().getDescription())
                .isEqualTo("permission denied: identity 'auditor' has no 'admin' permission on '*'");
        assertThat(contents.machine(io.fencer.lock.Limits.DEFAULT).describe("jobs/e").orElseThrow().holder())
                .isNotNull();
        assertThat(adminAs("auditor").status(StatusRequest.getDefaultInstance()).getReleaseFormatLevel())
                .isEqualTo(io.fencer.lock.LockStateMachine.FORMAT_LEVEL);
    }

    @Test
    void list_readOnJobsPrefix_listsUnderItAndRefusesEveryWiderPrefix() {
        TestSession session = openSession("scheduler");
        acquire("scheduler", session, "jobs/c");
        acquire("ops", openSession("ops"), "payroll");

        ListResponse jobs = list("auditor", "jobs/");
        ListResponse narrower = list("auditor", "jobs/c");

        assertThat(jobs.getLocksList()).extracting(LockInfo::getLock).containsExactly("jobs/c");
        assertThat(narrower.getLocksList()).extracting(LockInfo::getLock).containsExactly("jobs/c");
        assertDenied(failure(() -> list("auditor", "")), "auditor", "read", "*");
        assertDenied(failure(() -> list("auditor", "jo")), "auditor", "read", "jo");
        assertThat(list("ops", "").getLocksList()).extracting(LockInfo::getLock).contains("jobs/c", "payroll");
    }

    @Test
    void sessionCalls_identityWithoutLockAnywhere_areDeniedAndTheSessionKeepsItsLock() throws Exception {
        TestSession session = openSession("scheduler");
        FencingToken token = acquire("scheduler", session, "jobs/d").getToken();

        KeepAliveResponse own = keepAlive("scheduler", session);
        Throwable othersKeepAlive = keepAliveError("auditor", session);
        ErrorDetail othersClose = failure(() -> locksAs("auditor").closeSession(CloseSessionRequest.newBuilder()
                .setSessionId(session.id()).setSessionSecret(session.secret()).build()));

        assertThat(own.getTtlMillis()).isEqualTo(TTL_MILLIS);
        assertThat(othersKeepAlive).isInstanceOf(StatusRuntimeException.class);
        assertDenied(detail((StatusRuntimeException) othersKeepAlive), "auditor", "lock", "");
        assertDenied(othersClose, "auditor", "lock", "");
        assertThat(describe("jobs/d").getHolder().getValue()).isEqualTo(token.getValue());
    }

    @Test
    void storeBackup_withoutAdminOnEveryScope_deniedWhileAdminGetsAWholeFile() throws Exception {
        String jobsToken = acquire("scheduler", openSession("scheduler"), "jobs/s").getToken().getSequencer();
        storeAs("writer").write(StoreTesting.put("jobs/s", jobsToken, "k", "v"));

        StatusRuntimeException writer = deniedCall(() -> storeAs("writer").backup(
                io.fencer.api.v1.StoreBackupRequest.getDefaultInstance()).forEachRemaining(chunk -> { }));
        Path file = dataDir.resolve("store.fbk");
        java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
        storeAs("ops").backup(io.fencer.api.v1.StoreBackupRequest.getDefaultInstance())
                .forEachRemaining(chunk -> bytes.writeBytes(chunk.getData().toByteArray()));
        Files.write(file, bytes.toByteArray());

        assertThat(writer.getStatus().getCode()).isEqualTo(Status.Code.PERMISSION_DENIED);
        assertThat(writer.getStatus().getDescription())
                .isEqualTo("permission denied: identity 'writer' has no 'admin' permission on '*'");
        assertThat(io.fencer.store.StoreBackupFile.verify(file).scopes()).extracting(scope -> scope.scope())
                .containsExactly("jobs/s");
    }

    @Test
    void storeCalls_writeOnJobsPrefix_writesAndReadsJobsScopeAndIsDeniedOnDbScope() {
        String jobsToken = acquire("scheduler", openSession("scheduler"), "jobs/x").getToken().getSequencer();
        String dbToken = acquire("ops", openSession("ops"), "db/x").getToken().getSequencer();

        long accepted = storeAs("writer").write(StoreTesting.put("jobs/x", jobsToken, "k", "v")).getAccepted();
        boolean readBack = storeAs("writer").get(get("jobs/x")).getFound();
        ErrorDetail otherScope = failure(() -> storeAs("writer").write(StoreTesting.put("db/x", dbToken, "k", "v")));
        ErrorDetail readerWrites = failure(() -> storeAs("auditor").write(
                StoreTesting.put("jobs/x", jobsToken, "k", "w")));

        assertThat(accepted).isPositive();
        assertThat(readBack).isTrue();
        assertDenied(otherScope, "writer", "write", "db/x");
        assertDenied(readerWrites, "auditor", "write", "jobs/x");
        assertThat(storeAs("auditor").get(get("jobs/x")).getValue().toStringUtf8()).isEqualTo("v");
        assertThat(storeAs("ops").get(get("db/x")).getFound()).as("the denied write wrote nothing").isFalse();
        assertThat(storeAs("ops").fence(FenceRequest.newBuilder().setScope("db/x").build()).getAccepted())
                .as("nor raised the scope's accepted token").isZero();
    }

    @Test
    void createScope_adminCreatesAndWriteIsDeniedCreatingNothing() {
        TestSession ops = openSession("ops");
        String strictGrant = acquire("ops", ops, "jobs/strict").getToken().getSequencer();
        String yGrant = acquire("ops", ops, "jobs/y").getToken().getSequencer();
        CreateScopeRequest strict = CreateScopeRequest.newBuilder().setScope("jobs/strict")
                .setPolicy(Policy.POLICY_STRICT).setSequencer(strictGrant).build();

        boolean created = storeAs("ops").createScope(strict).getExists();
        ErrorDetail byWriter = failure(() -> storeAs("writer").createScope(strict.toBuilder().setScope("jobs/y")
                .setSequencer(yGrant).build()));

        assertThat(created).isTrue();
        assertDenied(byWriter, "writer", "admin", "jobs/y");
        assertThat(storeAs("ops").fence(FenceRequest.newBuilder().setScope("jobs/y").build()).getExists())
                .as("the denied CreateScope created nothing").isFalse();
    }

    @Test
    void createScope_adminBindsAScopeToAnotherLockItHolds_butNotWithoutItsCurrentGrant() {
        TestSession ops = openSession("ops");
        FencingToken schedulerGrant = acquire("ops", ops, "jobs/scheduler").getToken();
        CreateScopeRequest bound = CreateScopeRequest.newBuilder().setScope("jobs/queue").setLock("jobs/scheduler")
                .setSequencer(schedulerGrant.getSequencer()).build();
        TestSession other = openSession("ops");
        String otherGrant = acquire("ops", other, "jobs/elsewhere").getToken().getSequencer();

        ErrorDetail withoutGrant = failure(() -> storeAs("ops").createScope(bound.toBuilder().clearSequencer()
                .build()));
        ErrorDetail withOtherLocksGrant = failure(() -> storeAs("ops").createScope(bound.toBuilder()
                .setSequencer(otherGrant).build()));
        io.fencer.api.v1.ScopeInfo created = storeAs("ops").createScope(bound);

        assertThat(withoutGrant.getReason()).isEqualTo(Reason.REASON_NOT_HOLDER);
        assertThat(withoutGrant.getLock()).isEqualTo("jobs/scheduler");
        assertThat(withoutGrant.getPresentedToken()).isZero();
        assertThat(withoutGrant.getCurrentToken()).isEqualTo(schedulerGrant.getValue());
        assertThat(withoutGrant.getMessage()).contains("scope 'jobs/queue'", "lock 'jobs/scheduler'");
        assertThat(withOtherLocksGrant.getReason()).isEqualTo(Reason.REASON_SCOPE_MISMATCH);
        assertThat(created.getLock()).isEqualTo("jobs/scheduler");
    }

    @Test
    void deniedCalls_unaryAndPipelined_changeNothingAndAreCountedInMetrics() throws Exception {
        TestSession session = openSession("scheduler");
        String dbToken = acquire("ops", openSession("ops"), "db/m").getToken().getSequencer();
        LockInfo before = describe("other");
        ListResponse allBefore = list("ops", "");
        long appliedBefore = server.appliedIndex();
        assertThat(metrics()).contains("fencer_calls_refused_total{reason=\"permission_denied\"} 0.0",
                "fencer_calls_refused_total{reason=\"unauthenticated\"} 0.0");

        failure(() -> acquire("scheduler", session, "other"));
        CallError pipelined = pipelinedAcquire("scheduler", session, "other");
        failure(() -> storeAs("writer").write(StoreTesting.put("db/m", dbToken, "k", "v")));
        CallError pipelinedWrite = pipelinedWrite("writer", StoreTesting.put("db/m", dbToken, "k", "v"));

        assertThat(pipelined.getStatusCode()).isEqualTo(Status.Code.PERMISSION_DENIED.value());
        assertDenied(pipelined.getDetail(), "scheduler", "lock", "other");
        assertDenied(pipelinedWrite.getDetail(), "writer", "write", "db/m");
        assertThat(server.appliedIndex()).as("nothing was proposed").isEqualTo(appliedBefore);
        assertThat(describe("other")).isEqualTo(before);
        assertThat(list("ops", "")).isEqualTo(allBefore);
        assertThat(storeAs("ops").get(get("db/m")).getFound()).isFalse();
        assertThat(metrics()).contains("fencer_calls_refused_total{reason=\"permission_denied\"} 4.0",
                "fencer_calls_refused_total{reason=\"unauthenticated\"} 0.0");
    }

    @Test
    void reloadAcl_changedFile_allowsWhatWasDeniedAndAMalformedFileKeepsTheRulesInForce() throws Exception {
        TestSession session = openSession("scheduler");
        assertDenied(failure(() -> acquire("scheduler", session, "other/1")), "scheduler", "lock", "other/1");

        Files.writeString(aclFile, RULES + "scheduler lock other/\n");
        server.reloadAcl();
        boolean nowAllowed = acquire("scheduler", session, "other/1").getAcquired();
        Files.writeString(aclFile, "scheduler lock db/\nscheduler lock other/\nscheduler lokc jobs/\n");
        AclFileException malformed = catchThrowableOfType(AclFileException.class, server::reloadAcl);

        assertThat(nowAllowed).isTrue();
        assertThat(malformed).isNotNull().hasMessageContaining(aclFile.toString()).hasMessageContaining("line 3")
                .hasMessageContaining("'lokc'");
        assertThat(malformed.line()).isEqualTo(3);
        assertThat(acquire("scheduler", session, "other/2").getAcquired()).as("the old rules stay").isTrue();
        assertDenied(failure(() -> acquire("scheduler", session, "db/1")), "scheduler", "lock", "db/1");
        assertThat(acquire("ops", openSession("ops"), "db/1").getAcquired()).as("no line of it applied").isTrue();
    }

    @Test
    void watch_readRevokedByAclReload_endsPermissionDeniedBeforeTheNextEvent() throws Exception {
        TestSession session = openSession("scheduler");
        Watching watching = Watching.start(channel, Watching.from("jobs/", 0, 0), TestIdentities.as("auditor"));
        assertThat(watching.next().getKind()).isEqualTo(io.fencer.api.v1.LockEvent.Kind.KIND_START);

        // The auditor loses read on jobs/; an open Watch must not go on streaming what a new one would be refused.
        Files.writeString(aclFile, RULES.replace("auditor   read  jobs/", ""));
        server.reloadAcl();
        assertDenied(failure(() -> list("auditor", "jobs/")), "auditor", "read", "jobs/");
        acquire("scheduler", session, "jobs/secret");

        Object next = watching.nextMessage();
        assertThat(next).as("the watch's next message after the reload").isInstanceOf(StatusRuntimeException.class);
        StatusRuntimeException ended = (StatusRuntimeException) next;
        assertThat(ended.getStatus().getCode()).isEqualTo(Status.Code.PERMISSION_DENIED);
        assertDenied(detail(ended), "auditor", "read", "jobs/");
    }

    @Test
    void start_malformedAclFile_failsNamingFileAndLine() throws Exception {
        Path malformed = dataDir.resolve("malformed.acl");
        Files.writeString(malformed, "# fine\nops admin\n");

        assertThatThrownBy(() -> FencerServer.start(TestServers.singlePeer(dataDir.resolve("other"),
                new ManualTicker()).withAcl(malformed))).isInstanceOf(AclFileException.class)
                .hasMessage("ACL file " + malformed + " line 2 has 2 fields, expected IDENTITY PERMISSION PREFIX: "
                        + "'ops admin'");
    }

    private static void assertDenied(ErrorDetail detail, String identity, String permission, String name) {
        assertThat(detail.getReason()).isEqualTo(Reason.REASON_PERMISSION_DENIED);
        assertThat(detail.getIdentity()).isEqualTo(identity);
        assertThat(detail.getPermission()).isEqualTo(permission);
        assertThat(detail.getLock()).isEqualTo(name);
        assertThat(detail.getMessage()).startsWith("permission denied: identity '" + identity + "'");
    }

    private static StatusRuntimeException deniedCall(Runnable call) {
        try {
            call.run();
        } catch (StatusRuntimeException e) {
            return e;
        }
        throw new AssertionError("the call should have been denied");
    }

    private LocksGrpc.LocksBlockingStub locksAs(String identity) {
        return TestServers.stub(channel).withInterceptors(TestIdentities.as(identity));
    }

    private AdminGrpc.AdminBlockingStub adminAs(String identity) {
        return AdminGrpc.newBlockingStub(channel).withInterceptors(TestIdentities.as(identity));
    }

    private StoreGrpc.StoreBlockingStub storeAs(String identity) {
        return StoreTesting.stub(channel).withInterceptors(TestIdentities.as(identity));
    }

    private TestSession openSession(String identity) {
        return TestServers.openSession(locksAs(identity), TTL_MILLIS);
    }

    private AcquireResponse acquire(String identity, TestSession session, String lock) {
        return locksAs(identity).acquire(acquireRequest(session, lock));
    }

    private static AcquireRequest acquireRequest(TestSession session, String lock) {
        return TestServers.acquireRequest(session, lock, UUID.randomUUID().toString(), 0);
    }

    private LockInfo describe(String lock) {
        return locksAs("ops").describe(DescribeRequest.newBuilder().setLock(lock).build());
    }

    private ListResponse list(String identity, String prefix) {
        return locksAs(identity).list(ListRequest.newBuilder().setPrefix(prefix).build());
    }

    private static GetRequest get(String scope) {
        return GetRequest.newBuilder().setScope(scope).setKey(ByteString.copyFromUtf8("k")).build();
    }

    private KeepAliveResponse keepAlive(String identity, TestSession session) throws InterruptedException {
        Object answer = keepAliveAnswer(identity, session);
        if (answer instanceof KeepAliveResponse response) {
            return response;
        }
        throw new AssertionError("no keepalive answer: " + answer);
    }

    private Throwable keepAliveError(String identity, TestSession session) throws InterruptedException {
        Object answer = keepAliveAnswer(identity, session);
        if (answer instanceof Throwable error) {
            return error;
        }
        throw new AssertionError("the keepalive should have failed: " + answer);
    }

    private Object keepAliveAnswer(String identity, TestSession session) throws InterruptedException {
        LinkedBlockingQueue<Object> answers = new LinkedBlockingQueue<>();
        StreamObserver<KeepAliveRequest> requests = LocksGrpc.newStub(channel)
                .withInterceptors(TestIdentities.as(identity)).keepAlive(collecting(answers));
        requests.onNext(KeepAliveRequest.newBuilder().setSessionId(session.id()).setSessionSecret(session.secret())
                .build());
        Object answer = answers.poll(20, TimeUnit.SECONDS);
        requests.onCompleted();
        return answer;
    }

    private CallError pipelinedAcquire(String identity, TestSession session, String lock) throws InterruptedException {
        LinkedBlockingQueue<Object> answers = new LinkedBlockingQueue<>();
        StreamObserver<PipelineRequest> requests = LocksGrpc.newStub(channel)
                .withInterceptors(TestIdentities.as(identity)).pipeline(collecting(answers));
        requests.onNext(PipelineRequest.newBuilder().setCallId(1).setAcquire(acquireRequest(session, lock)).build());
        Object answer = answers.poll(20, TimeUnit.SECONDS);
        requests.onCompleted();
        assertThat(answer).isInstanceOf(PipelineResponse.class);
        return ((PipelineResponse) answer).getError();
    }

    private CallError pipelinedWrite(String identity, WriteRequest write) throws InterruptedException {
        LinkedBlockingQueue<Object> answers = new LinkedBlockingQueue<>();
        StreamObserver<StorePipelineRequest> requests = StoreGrpc.newStub(channel)
                .withInterceptors(TestIdentities.as(identity)).pipeline(collecting(answers));
        requests.onNext(StorePipelineRequest.newBuilder().setCallId(1).setWrite(write).build());
        Object answer = answers.poll(20, TimeUnit.SECONDS);
        requests.onCompleted();
        assertThat(answer).isInstanceOf(StorePipelineResponse.class);
        return ((StorePipelineResponse) answer).getError();
    }

    private String metrics() throws Exception {
        HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.adminPort()
                + "/metrics")).timeout(Duration.ofSeconds(20)).GET().build();
        return http.send(request, HttpResponse.BodyHandlers.ofString()).body();
    }
}
