package io.fencer.client.internal;

import com.google.protobuf.ByteString;
import io.fencer.api.v1.Delete;
import io.fencer.api.v1.GetResponse;
import io.fencer.api.v1.Op;
import io.fencer.api.v1.Policy;
import io.fencer.api.v1.Put;
import io.fencer.api.v1.WriteResponse;
import io.fencer.client.ScopeInfo;
import io.fencer.client.StoreOp;
import io.fencer.client.StoreValue;
import io.fencer.client.WriteReceipt;
import io.fencer.core.FencePolicy;
import io.fencer.core.InternalException;
import java.util.ArrayList;
import java.util.List;

/** Conversions between the messages of {@code store.proto} and the store client's values. */
final class StoreProtos {
    private StoreProtos() {}

    static List<Op> ops(List<StoreOp> ops) {
        List<Op> protos = new ArrayList<>(ops.size());
        for (StoreOp op : ops) {
            protos.add(op(op));
        }
        return protos;
    }

    static Op op(StoreOp op) {
        ByteString key = ByteString.copyFrom(op.key());
        return switch (op.kind()) {
            case PUT -> Op.newBuilder().setPut(Put.newBuilder().setKey(key)
                    .setValue(ByteString.copyFrom(op.value()))).build();
            case DELETE -> Op.newBuilder().setDelete(Delete.newBuilder().setKey(key)).build();
        };
    }

    static WriteReceipt receipt(WriteResponse response) {
        return new WriteReceipt(response.getScope(), response.getToken(), response.getAccepted(),
                response.getRevision(), response.getOpsApplied(), response.getReplayed());
    }

    static StoreValue value(String scope, GetResponse response) {
        return new StoreValue(scope, response.getFound() ? response.getValue().toByteArray() : null,
                response.getWrittenBy(), response.getAccepted());
    }

    static ScopeInfo scopeInfo(io.fencer.api.v1.ScopeInfo info) {
        return new ScopeInfo(info.getScope(), info.getLock(), policy(info.getPolicy()), info.getAccepted(),
                info.getRevision(), info.getExists());
    }

    static Policy toProto(FencePolicy policy) {
        return switch (policy) {
            case AT_LEAST -> Policy.POLICY_AT_LEAST;
            case STRICT -> Policy.POLICY_STRICT;
        };
    }

    /**
     * Returns the policy the store sent; unspecified means the default, AT_LEAST.
     *
     * @throws InternalException for a policy this client does not know
     */
    static FencePolicy policy(Policy policy) {
        return switch (policy) {
            case POLICY_UNSPECIFIED, POLICY_AT_LEAST -> FencePolicy.AT_LEAST;
            case POLICY_STRICT -> FencePolicy.STRICT;
            default -> throw new InternalException("the store sent an unknown scope policy " + policy);
        };
    }
}
