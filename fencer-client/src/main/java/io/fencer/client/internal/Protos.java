package io.fencer.client.internal;

import io.fencer.api.v1.EndCause;
import io.fencer.api.v1.LockInfo;
import io.fencer.api.v1.ValidateResponse;
import io.fencer.api.v1.Waiter;
import io.fencer.client.LockStatus;
import io.fencer.client.TokenStatus;
import io.fencer.core.FencingToken;
import io.fencer.core.InternalException;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.LockMode;
import io.fencer.core.Sequencer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/** Conversions between the wire messages of {@code fencer.v1} and the client's values. */
final class Protos {
    private static final String END_CAUSE_PREFIX = "END_CAUSE_";
    /** The holder identity shown when a server names none (it predates holder identities). */
    static final String UNKNOWN_IDENTITY = "unknown";

    private Protos() {}

    static io.fencer.api.v1.FencingToken toProto(FencingToken token) {
        io.fencer.api.v1.FencingToken.Builder proto = io.fencer.api.v1.FencingToken.newBuilder()
                .setLock(token.lock()).setValue(token.value());
        if (token.mode() == LockMode.SHARED) {
            proto.setMode(io.fencer.api.v1.LockMode.LOCK_MODE_SHARED);
        }
        return proto.build();
    }

    /**
     * Returns the token a server sent.
     *
     * @throws InternalException when it is not a valid token: the server broke the contract
     */
    static FencingToken token(io.fencer.api.v1.FencingToken proto) {
        try {
            LockMode mode = proto.getMode() == io.fencer.api.v1.LockMode.LOCK_MODE_SHARED ? LockMode.SHARED
                    : LockMode.EXCLUSIVE;
            return new FencingToken(proto.getLock(), proto.getValue(), mode);
        } catch (InvalidArgumentException e) {
            throw new InternalException("the server sent an invalid token: " + e.getMessage());
        }
    }

    /**
     * Returns the wire form the server sent with {@code token} (signed when the service signs), or the plain form
     * when it sent none.
     *
     * @throws InternalException when the sequencer sent does not parse or names another token: the server broke
     *     the contract
     */
    static String sequencer(io.fencer.api.v1.FencingToken proto, FencingToken token) {
        String sequencer = proto.getSequencer();
        String unsigned = token.sequencer();
        if (sequencer.isEmpty()) {
            return unsigned;
        }
        if (sequencer.equals(unsigned)) {
            return sequencer; // the unsigned form of this very token: formatting it was cheaper than parsing
        }
        FencingToken named;
        try {
            named = Sequencer.parse(sequencer);
        } catch (InvalidArgumentException e) {
            throw new InternalException("the server sent token " + token + " with a malformed sequencer: "
                    + e.getMessage());
        }
        if (!named.equals(token)) {
            throw new InternalException("the server sent token " + token + " with a sequencer that names " + named);
        }
        return sequencer;
    }

    /** Returns the token a server sent, or null when the field is absent or carries no token (value 0). */
    static FencingToken tokenOrNull(boolean present, io.fencer.api.v1.FencingToken proto) {
        return present && proto.getValue() != FencingToken.NONE ? token(proto) : null;
    }

    static LockStatus lockStatus(LockInfo info) {
        List<Long> waiters = new ArrayList<>(info.getWaitersCount());
        for (Waiter waiter : info.getWaitersList()) {
            waiters.add(waiter.getSessionId());
        }
        FencingToken holder = tokenOrNull(info.hasHolder(), info.getHolder());
        List<FencingToken> readers = new ArrayList<>(info.getSharedHoldersCount());
        for (io.fencer.api.v1.SharedHolder reader : info.getSharedHoldersList()) {
            readers.add(token(reader.getToken()));
        }
        // A server before the totals sends 0 and lists all.
        return new LockStatus(info.getLock(), holder, holder == null ? null : identity(info.getHolderIdentity()),
                waiters, info.getLastToken(), info.getDelayed(), endCause(info.getLastEnd()), readers,
                Math.max(info.getWaitersTotal(), waiters.size()), Math.max(info.getSharedHoldersTotal(),
                readers.size()));
    }

    static TokenStatus tokenStatus(ValidateResponse response) {
        TokenStatus.Status status;
        switch (response.getStatus()) {
            case CURRENT:
                status = TokenStatus.Status.CURRENT;
                break;
            case SUPERSEDED:
                status = TokenStatus.Status.SUPERSEDED;
                break;
            case ENDED:
                status = TokenStatus.Status.ENDED;
                break;
            case NEVER_ISSUED:
                status = TokenStatus.Status.NEVER_ISSUED;
                break;
            default:
                throw new InternalException("the server answered Validate without a known status: "
                        + response.getStatusValue());
        }
        return new TokenStatus(status, response.getLastToken(), response.getSupersededBy(),
                status == TokenStatus.Status.CURRENT ? identity(response.getHolderIdentity()) : null,
                Duration.ofMillis(response.getLeaseRemainingMillis()), endCause(response.getEnded()));
    }

    /** Returns the holder's identity a server sent; one before session secrets sent none, shown as unknown. */
    private static String identity(String identity) {
        return identity.isEmpty() ? UNKNOWN_IDENTITY : identity;
    }

    /** Returns the cause's name without its prefix ({@code RELEASED}, ...), or null when unspecified or unknown. */
    static String endCause(EndCause cause) {
        if (cause == EndCause.END_CAUSE_UNSPECIFIED || cause == EndCause.UNRECOGNIZED) {
            return null;
        }
        assert cause.name().startsWith(END_CAUSE_PREFIX) : "end cause " + cause + " lacks " + END_CAUSE_PREFIX;
        return cause.name().substring(END_CAUSE_PREFIX.length());
    }
}
