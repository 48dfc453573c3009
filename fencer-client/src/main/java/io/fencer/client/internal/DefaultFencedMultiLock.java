package io.fencer.client.internal;

import io.fencer.api.v1.AcquireAllRequest;
import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.client.FencedMultiLock;
import io.fencer.client.Grant;
import io.fencer.client.LockTimeoutException;
import io.fencer.core.FencingToken;
import io.fencer.core.InternalException;
import io.fencer.core.InvalidArgumentException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/** A multi-lock through one session: one logical AcquireAll call per acquire, with one request id. Thread-safe. */
final class DefaultFencedMultiLock implements FencedMultiLock {
    /** The most locks one multi-lock may name, as the service bounds them. */
    static final int LOCKS_MAX = 64;

    private final DefaultSession session;
    private final List<String> names;
    private final String operation;

    DefaultFencedMultiLock(DefaultSession session, List<String> names) {
        if (names.isEmpty() || names.size() > LOCKS_MAX) {
            throw new InvalidArgumentException("locks", Integer.toString(names.size()), "a multi-lock names "
                    + names.size() + " locks: it must name 1 to locksPerAcquireMax " + LOCKS_MAX);
        }
        Set<String> seen = new HashSet<>();
        for (String name : names) {
            if (!seen.add(name)) {
                throw new InvalidArgumentException("locks", name, "a multi-lock names lock '"
                        + InvalidArgumentException.printable(name) + "' twice");
            }
        }
        this.session = session;
        this.names = List.copyOf(names);
        this.operation = "AcquireAll " + names;
    }

    @Override
    public List<String> names() {
        return names;
    }

    @Override
    public MultiGrant acquire(Duration wait) {
        long waitMillis = DefaultFencedLock.checkWait(wait);
        return acquire(waitMillis).orElseThrow(() -> new LockTimeoutException(names.toString(), wait));
    }

    @Override
    public Optional<MultiGrant> tryAcquire() {
        return acquire(0);
    }

    private Optional<MultiGrant> acquire(long waitMillis) {
        session.checkAlive();
        AcquireAllRequest.Builder request = AcquireAllRequest.newBuilder().setSessionId(session.id())
                .setSessionSecret(session.secret()).addAllLocks(names)
                .setRequestId(session.client().requestIds().next());
        AcquireResponse response = WaitingAcquire.call(session, operation, waitMillis, LocksGrpc.getAcquireAllMethod(),
                millis -> request.setWaitMillis(millis).build());
        return response.getAcquired() ? Optional.of(grants(response)) : Optional.empty();
    }

    private MultiGrant grants(AcquireResponse response) {
        if (response.getTokensCount() != names.size()) {
            throw new InternalException(operation + " was answered with " + response.getTokensCount() + " tokens");
        }
        List<Grant> grants = new ArrayList<>(names.size());
        for (int i = 0; i < names.size(); i++) {
            FencingToken token = Protos.token(response.getTokens(i));
            if (!token.lock().equals(names.get(i))) {
                throw new InternalException(operation + " was answered with token " + token + " for lock '"
                        + names.get(i) + "'");
            }
            grants.add(new DefaultGrant(session, token, Protos.sequencer(response.getTokens(i), token)));
        }
        List<Grant> held = List.copyOf(grants);
        return new MultiGrant() {
            @Override
            public List<Grant> grants() {
                return held;
            }

            @Override
            public void close() {
                RuntimeException first = null;
                for (Grant grant : held) {
                    try {
                        grant.close();
                    } catch (RuntimeException e) {
                        first = first == null ? e : first;
                    }
                }
                if (first != null) {
                    throw first;
                }
            }
        };
    }

    @Override
    public String toString() {
        return "FencedMultiLock[" + names + ", session " + session.id() + "]";
    }
}
