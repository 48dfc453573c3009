package io.fencer.server.store;

import io.fencer.api.v1.Policy;
import io.fencer.api.v1.WriteResponse;
import io.fencer.core.FencePolicy;
import io.fencer.core.InvalidArgumentException;
import io.fencer.store.Op;
import io.fencer.store.ScopeInfo;
import io.fencer.store.WriteResult;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/** The conversions between store.proto's messages and the engine's types, for the service and the replicated store. */
final class StoreWire {
    /** The longest idempotency key, in bytes of UTF-8 (store.proto). */
    static final int IDEMPOTENCY_KEY_BYTES_MAX = 128;

    private StoreWire() {}

    /** Converts a request's ops, refusing more than {@code opsMax} before converting any. */
    static List<Op> ops(List<io.fencer.api.v1.Op> wire, int opsMax) {
        if (wire.size() > opsMax) { // checked before converting, so a flood of tiny ops costs no copies
            throw new InvalidArgumentException("ops", Integer.toString(wire.size()), "a request has " + wire.size()
                    + " ops, more than the opsPerWriteMax of " + opsMax);
        }
        List<Op> ops = new ArrayList<>(wire.size());
        for (int index = 0; index < wire.size(); index++) {
            io.fencer.api.v1.Op op = wire.get(index);
            switch (op.getOpCase()) {
                case PUT -> ops.add(Op.put(op.getPut().getKey().toByteArray(), op.getPut().getValue().toByteArray()));
                case DELETE -> ops.add(Op.delete(op.getDelete().getKey().toByteArray()));
                default -> throw new InvalidArgumentException("ops[" + index + "]", "", "op " + index
                        + " is neither a put nor a delete");
            }
        }
        return ops;
    }

    static String idempotencyKey(String key) {
        if (key.isEmpty()) {
            return null;
        }
        int bytes = key.getBytes(StandardCharsets.UTF_8).length;
        if (bytes > IDEMPOTENCY_KEY_BYTES_MAX) {
            throw new InvalidArgumentException("idempotency_key", key, "idempotency_key is " + bytes
                    + " bytes of UTF-8, more than the " + IDEMPOTENCY_KEY_BYTES_MAX + " allowed");
        }
        return key;
    }

    static FencePolicy policy(Policy policy) {
        return switch (policy) {
            case POLICY_UNSPECIFIED, POLICY_AT_LEAST -> FencePolicy.AT_LEAST;
            case POLICY_STRICT -> FencePolicy.STRICT;
            default -> throw new InvalidArgumentException("policy", Integer.toString(policy.getNumber()),
                    "policy " + policy.getNumber() + " is not a known policy");
        };
    }

    static Policy policy(FencePolicy policy) {
        return switch (policy) {
            case AT_LEAST -> Policy.POLICY_AT_LEAST;
            case STRICT -> Policy.POLICY_STRICT;
        };
    }

    static io.fencer.api.v1.ScopeInfo scopeInfo(ScopeInfo info) {
        return io.fencer.api.v1.ScopeInfo.newBuilder().setScope(info.scope()).setLock(info.lock())
                .setPolicy(policy(info.policy())).setAccepted(info.accepted()).setRevision(info.revision())
                .setExists(info.exists()).build();
    }

    static WriteResponse response(WriteResult result) {
        return WriteResponse.newBuilder().setScope(result.scope()).setToken(result.token())
                .setAccepted(result.accepted()).setRevision(result.revision()).setOpsApplied(result.opsApplied())
                .setReplayed(result.replayed()).build();
    }

    /** Returns the engine's result of a write from its wire form (the replicated store's reply). */
    static WriteResult writeResult(WriteResponse response) {
        return new WriteResult(response.getScope(), response.getToken(), response.getAccepted(),
                response.getRevision(), response.getOpsApplied(), response.getReplayed());
    }

    /** Returns the engine's scope state from its wire form (the replicated store's reply). */
    static ScopeInfo scopeInfo(io.fencer.api.v1.ScopeInfo info) {
        return new ScopeInfo(info.getScope(), info.getLock(), policy(info.getPolicy()), info.getAccepted(),
                info.getRevision(), info.getExists(), null);
    }

    /** Returns an imported scope from its wire form; names and limits are checked by the engine. */
    static io.fencer.store.ImportedScope importedScope(io.fencer.api.v1.ImportedScope wire) {
        List<io.fencer.store.ImportedScope.Key> keys = new ArrayList<>(wire.getKeysCount());
        for (io.fencer.api.v1.ImportedKey key : wire.getKeysList()) {
            keys.add(new io.fencer.store.ImportedScope.Key(key.getKey().toByteArray(), key.getValue().toByteArray(),
                    key.getWrittenBy()));
        }
        return new io.fencer.store.ImportedScope(wire.getScope(), wire.getLock().isEmpty() ? wire.getScope()
                : wire.getLock(), policy(wire.getPolicy()), wire.getAccepted(), wire.getRevision(), keys);
    }

    /** Returns the wire form of an imported scope. */
    static io.fencer.api.v1.ImportedScope importedScope(io.fencer.store.ImportedScope scope) {
        io.fencer.api.v1.ImportedScope.Builder wire = io.fencer.api.v1.ImportedScope.newBuilder()
                .setScope(scope.scope()).setLock(scope.lock()).setPolicy(policy(scope.policy()))
                .setAccepted(scope.accepted()).setRevision(scope.revision());
        for (io.fencer.store.ImportedScope.Key key : scope.keys()) {
            wire.addKeys(io.fencer.api.v1.ImportedKey.newBuilder().setKey(com.google.protobuf.ByteString.copyFrom(
                    key.key())).setValue(com.google.protobuf.ByteString.copyFrom(key.value()))
                    .setWrittenBy(key.writtenBy()));
        }
        return wire.build();
    }

    static io.fencer.api.v1.ImportScopesResponse outcomes(List<io.fencer.store.ImportOutcome> outcomes) {
        io.fencer.api.v1.ImportScopesResponse.Builder response = io.fencer.api.v1.ImportScopesResponse.newBuilder();
        for (io.fencer.store.ImportOutcome outcome : outcomes) {
            response.addOutcomes(io.fencer.api.v1.ImportedScopeOutcome.newBuilder().setScope(outcome.scope())
                    .setKind(io.fencer.api.v1.ImportedScopeOutcome.Kind.valueOf(outcome.kind().name()))
                    .setAccepted(outcome.accepted()).setDetail(outcome.detail()));
        }
        return response.build();
    }

    static List<io.fencer.store.ImportOutcome> outcomes(io.fencer.api.v1.ImportScopesResponse response) {
        List<io.fencer.store.ImportOutcome> outcomes = new ArrayList<>(response.getOutcomesCount());
        for (io.fencer.api.v1.ImportedScopeOutcome outcome : response.getOutcomesList()) {
            outcomes.add(new io.fencer.store.ImportOutcome(outcome.getScope(),
                    io.fencer.store.ImportOutcome.Kind.valueOf(outcome.getKind().name()), outcome.getAccepted(),
                    outcome.getDetail()));
        }
        return outcomes;
    }
}
