package io.fencer.server;

import static io.fencer.server.TestServers.failure;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import com.google.protobuf.ByteString;
import io.fencer.api.v1.BeginUnitRequest;
import io.fencer.api.v1.CommitUnitRequest;
import io.fencer.api.v1.ErrorDetail;
import io.fencer.api.v1.FenceRequest;
import io.fencer.api.v1.GetRequest;
import io.fencer.api.v1.GetResponse;
import io.fencer.api.v1.ImportScopesRequest;
import io.fencer.api.v1.ImportedKey;
import io.fencer.api.v1.ImportedScope;
import io.fencer.api.v1.Reason;
import io.fencer.api.v1.ScopeInfo;
import io.fencer.api.v1.StoreGrpc;
import io.fencer.api.v1.UnitWriteRequest;
import io.fencer.api.v1.WriteRequest;
import io.fencer.api.v1.WriteResponse;
import io.fencer.core.FencingToken;
import io.fencer.core.Sequencer;
import io.fencer.server.StoreServiceTest.StoreTesting;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import org.junit.jupiter.api.Test;

/**
 * The store's refusals of bad input and of requests over its limits, over real gRPC, as one contract that both kinds
 * of store keep: the single-node store of one server ({@link SingleNodeStoreBadInputTest}) and the replicated store
 * of three peers ({@link ReplicatedStoreBadInputTest}). A refusal names the field and the value, and changes nothing.
 * Each test uses scopes of its own, so that a subclass may share one store between them.
 */
abstract class StoreBadInputContract {
    /** Returns a stub of the store's service: the single server, or the group's leader. */
    abstract StoreGrpc.StoreBlockingStub store();

    /** Returns the most bytes of keys and values in one write this kind of store admits. */
    abstract int batchBytesMax();

    @Test
    void write_withBadInput_isRefusedNamingTheValueAndChangesNothing() {
        String token = Sequencer.format(new FencingToken("inv", 5));
        WriteResponse first = store().write(StoreTesting.put("inv", token, "k", "kept"));
        String otherLock = Sequencer.format(new FencingToken("other", 9));
        byte[] megabyte = new byte[1024 * 1024];

        ErrorDetail mismatch = failure(() -> store().write(StoreTesting.put("inv", otherLock, "k", "x")));
        ErrorDetail malformed = failure(() -> store().write(StoreTesting.put("inv", "nope", "k", "x")));
        ErrorDetail longKey = failure(() -> store().write(StoreTesting.put("inv", token, "k".repeat(1025), "x")));
        ErrorDetail bigValue = failure(() -> store().write(WriteRequest.newBuilder().setScope("inv")
                .setSequencer(token).addOps(StoreTesting.putOp("k", new byte[megabyte.length + 1])).build()));
        WriteRequest.Builder bigBatch = WriteRequest.newBuilder().setScope("inv").setSequencer(token);
        for (int index = 0; index < 4; index++) {
            bigBatch.addOps(StoreTesting.putOp("k" + index, megabyte));
        }
        ErrorDetail batch = failure(() -> store().write(bigBatch.build()));
        WriteRequest.Builder manyOps = WriteRequest.newBuilder().setScope("inv").setSequencer(token);
        for (int index = 0; index < 1001; index++) {
            manyOps.addOps(StoreTesting.putOp("k" + index, new byte[1]));
        }
        ErrorDetail tooMany = failure(() -> store().write(manyOps.build()));

        assertThat(mismatch.getReason()).isEqualTo(Reason.REASON_SCOPE_MISMATCH);
        assertThat(mismatch.getLock()).isEqualTo("inv");
        assertThat(mismatch.getValue()).isEqualTo("other");
        assertInvalid(malformed, "sequencer", "nope");
        assertInvalid(longKey, "key", "'kkkk");
        assertThat(longKey.getMessage()).contains("1025 bytes", "keyBytesMax of 1024");
        assertInvalid(bigValue, "value", "1048577 bytes");
        assertInvalid(batch, "ops", (4 * megabyte.length + 4 * 2) + " bytes");
        assertThat(batch.getMessage()).contains("batchBytesMax of " + batchBytesMax());
        assertInvalid(tooMany, "ops", "1001");
        ScopeInfo fence = store().fence(FenceRequest.newBuilder().setScope("inv").build());
        assertThat(fence.getRevision()).isEqualTo(first.getRevision());
        assertThat(fence.getAccepted()).isEqualTo(5);
        assertValue("inv", "k", "kept", 5);
        assertThat(store().get(GetRequest.newBuilder().setScope("inv").setKey(bytes("k0")).build()).getFound())
                .isFalse();
    }

    @Test
    void write_overFiveMebibytes_isResourceExhaustedAndChangesNothing() {
        String token = Sequencer.format(new FencingToken("huge", 1));
        WriteRequest.Builder huge = WriteRequest.newBuilder().setScope("huge").setSequencer(token);
        for (int index = 0; index < 6; index++) {
            huge.addOps(StoreTesting.putOp("k" + index, new byte[1024 * 1024]));
        }

        StatusRuntimeException tooBig = catchThrowableOfType(StatusRuntimeException.class,
                () -> store().write(huge.build()));

        assertThat(tooBig.getStatus().getCode()).isEqualTo(Status.Code.RESOURCE_EXHAUSTED);
        assertThat(store().fence(FenceRequest.newBuilder().setScope("huge").build()).getExists()).isFalse();
    }

    @Test
    void write_sameIdempotencyKeyAndTokenWithOtherOps_isFailedPreconditionNamingScopeAndKeyAndAppliesNothing() {
        String token = Sequencer.format(new FencingToken("idem", 3));
        WriteResponse first = store().write(StoreTesting.put("idem", token, "k", "first value").toBuilder()
                .setIdempotencyKey("req-1").build());

        StatusRuntimeException refused = catchThrowableOfType(StatusRuntimeException.class, () -> store().write(
                StoreTesting.put("idem", token, "k", "other value").toBuilder().setIdempotencyKey("req-1").build()));

        assertThat(refused.getStatus().getCode()).isEqualTo(Status.Code.FAILED_PRECONDITION);
        ErrorDetail detail = TestServers.detail(refused);
        assertThat(detail.getReason()).isEqualTo(Reason.REASON_IDEMPOTENCY_MISMATCH);
        assertThat(detail.getLock()).isEqualTo("idem");
        assertThat(detail.getValue()).isEqualTo("req-1");
        assertThat(detail.getPresentedToken()).isEqualTo(3);
        assertThat(detail.getMessage()).doesNotContain("first value", "other value");
        assertThat(store().fence(FenceRequest.newBuilder().setScope("idem").build()).getRevision())
                .as("nothing applied").isEqualTo(first.getRevision());
        assertValue("idem", "k", "first value", 3);
    }

    @Test
    void beginUnit_withTimeoutOutOfRange_isInvalidNamingTheValue() {
        String token = Sequencer.format(new FencingToken("t", 1));
        ErrorDetail zero = failure(() -> store().beginUnit(BeginUnitRequest.newBuilder().setScope("t")
                .setSequencer(token).build()));
        ErrorDetail long60001 = failure(() -> store().beginUnit(BeginUnitRequest.newBuilder().setScope("t")
                .setSequencer(token).setTimeoutMillis(60_001).build()));
        ErrorDetail unknown = failure(() -> store().commitUnit(CommitUnitRequest.newBuilder().setUnitId("nope")
                .build()));

        assertInvalid(zero, "timeout_millis", "0");
        assertInvalid(long60001, "timeout_millis", "60001");
        assertInvalid(unknown, "unit_id", "nope");
    }

    /**
     * A unit's op over a size limit is refused at UnitWrite, naming the key, and aborts the unit: the replicated store
     * once buffered it and let the commit's log entry be refused on every replica after that entry had begun the
     * unit there, which raised the scope's accepted token for a unit that applied nothing.
     */
    @Test
    void unitWrite_withKeyOverTheLimitOrEmpty_isRefusedNamingTheKeyAndTheUnitAppliesNothing() {
        String token = Sequencer.format(new FencingToken("unitkey", 5));
        WriteResponse first = store().write(StoreTesting.put("unitkey", token, "k", "kept"));
        String longUnit = beginUnit("unitkey", token);

        ErrorDetail longKey = failure(() -> store().unitWrite(UnitWriteRequest.newBuilder().setUnitId(longUnit)
                .addOps(StoreTesting.putOp("a", new byte[1])).addOps(StoreTesting.putOp("k".repeat(1025), new byte[1]))
                .build()));
        ErrorDetail committedLong = failure(() -> store().commitUnit(CommitUnitRequest.newBuilder()
                .setUnitId(longUnit).build()));
        String emptyUnit = beginUnit("unitkey", token);
        ErrorDetail emptyKey = failure(() -> store().unitWrite(UnitWriteRequest.newBuilder().setUnitId(emptyUnit)
                .addOps(StoreTesting.putOp("", new byte[1])).build()));

        assertInvalid(longKey, "key", "'kkkk");
        assertThat(longKey.getMessage()).contains("1025 bytes", "keyBytesMax of 1024");
        assertThat(committedLong.getMessage()).as("the refused op aborted its unit").contains("aborted");
        assertInvalid(emptyKey, "key", "");
        ScopeInfo fence = store().fence(FenceRequest.newBuilder().setScope("unitkey").build());
        assertThat(fence.getRevision()).isEqualTo(first.getRevision());
        assertThat(fence.getAccepted()).isEqualTo(5);
        assertThat(store().get(GetRequest.newBuilder().setScope("unitkey").setKey(bytes("a")).build()).getFound())
                .isFalse();
    }

    /**
     * A write refused for its lock or its ops leaves the unit open on its scope to commit: the replicated store's
     * leader once compared a token of another lock with the unit's, and the token of an invalid write too, and
     * preempted the unit before the write was refused.
     */
    @Test
    void write_refusedForItsLockOrItsOpsWhileAUnitHoldsTheScope_leavesTheUnitToCommit() {
        String token = Sequencer.format(new FencingToken("held", 5));
        String unit = beginUnit("held", token);
        store().unitWrite(UnitWriteRequest.newBuilder().setUnitId(unit).addOps(StoreTesting.putOp("a", new byte[] {'1'}))
                .build());

        ErrorDetail otherLock = failure(() -> store().write(StoreTesting.put("held",
                Sequencer.format(new FencingToken("intruder", 9)), "a", "x")));
        ErrorDetail longKey = failure(() -> store().write(StoreTesting.put("held",
                Sequencer.format(new FencingToken("held", 9)), "k".repeat(1025), "x")));
        WriteResponse committed = store().commitUnit(CommitUnitRequest.newBuilder().setUnitId(unit).build());

        assertThat(otherLock.getReason()).isEqualTo(Reason.REASON_SCOPE_MISMATCH);
        assertInvalid(longKey, "key", "'kkkk");
        assertThat(committed.getOpsApplied()).isEqualTo(1);
        assertThat(committed.getAccepted()).isEqualTo(5);
        assertValue("held", "a", "1", 5);
    }

    private String beginUnit(String scope, String sequencer) {
        return store().beginUnit(BeginUnitRequest.newBuilder().setScope(scope).setSequencer(sequencer)
                .setTimeoutMillis(30_000).build()).getUnitId();
    }

    @Test
    void importScopes_overItsLimits_isRefusedWholeNamingTheValueAndImportsNothing() {
        ImportScopesRequest.Builder many = ImportScopesRequest.newBuilder();
        for (int i = 0; i < 1_001; i++) {
            many.addScopes(imported("many" + i, 1, "k", new byte[1]));
        }
        ImportScopesRequest twice = ImportScopesRequest.newBuilder().addScopes(imported("twice", 1, "k", new byte[1]))
                .addScopes(imported("twice", 1, "k", new byte[1])).build();
        ImportScopesRequest aboveItsFence = ImportScopesRequest.newBuilder().addScopes(imported("above", 1, "k",
                new byte[1]).toBuilder().setKeys(0, ImportedKey.newBuilder().setKey(bytes("k")).setWrittenBy(2)))
                .build();
        ImportScopesRequest.Builder big = ImportScopesRequest.newBuilder();
        big.addScopes(imported("big1", 1, "k", new byte[700 * 1024]));
        big.addScopes(imported("big2", 1, "k", new byte[700 * 1024]));

        ErrorDetail tooMany = failure(() -> store().importScopes(many.build()));
        ErrorDetail duplicate = failure(() -> store().importScopes(twice));
        ErrorDetail written = failure(() -> store().importScopes(aboveItsFence));
        ErrorDetail tooBig = failure(() -> store().importScopes(big.build()));

        assertInvalid(tooMany, "scopes", "1001");
        assertThat(tooMany.getMessage()).contains("[1, 1000]");
        assertInvalid(duplicate, "scopes", "twice");
        assertInvalid(written, "written_by", "2");
        assertThat(written.getMessage()).contains("'above'").contains("[1, 1]");
        assertInvalid(tooBig, "scopes", "1433");
        assertThat(tooBig.getMessage()).contains(Integer.toString(
                io.fencer.server.store.ReplicatedStore.IMPORT_REQUEST_BYTES_MAX));
        for (String scope : new String[] {"many0", "twice", "above", "big1"}) {
            assertThat(store().fence(FenceRequest.newBuilder().setScope(scope).build()).getExists())
                    .as("scope %s not imported", scope).isFalse();
        }
    }

    private static ImportedScope imported(String scope, long token, String key, byte[] value) {
        return ImportedScope.newBuilder().setScope(scope).setAccepted(token).setRevision(1)
                .addKeys(ImportedKey.newBuilder().setKey(bytes(key)).setValue(ByteString.copyFrom(value))
                        .setWrittenBy(token)).build();
    }

    private void assertValue(String scope, String key, String value, long writtenBy) {
        GetResponse read = store().get(GetRequest.newBuilder().setScope(scope).setKey(bytes(key)).build());
        assertThat(read.getFound()).as("%s/%s found", scope, key).isTrue();
        assertThat(read.getValue().toStringUtf8()).isEqualTo(value);
        assertThat(read.getWrittenBy()).isEqualTo(writtenBy);
    }

    private static void assertInvalid(ErrorDetail detail, String field, String valuePrefix) {
        assertThat(detail.getReason()).as(detail.getMessage()).isEqualTo(Reason.REASON_INVALID_ARGUMENT);
        assertThat(detail.getField()).isEqualTo(field);
        assertThat(detail.getValue()).startsWith(valuePrefix);
    }

    private static ByteString bytes(String text) {
        return ByteString.copyFromUtf8(text);
    }
}
