package io.fencer.client.internal;

import static java.util.concurrent.TimeUnit.MILLISECONDS;

import io.fencer.api.v1.AcquireAllRequest;
import io.fencer.api.v1.AcquireResponse;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.client.FencedMultiLock;
import io.fencer.client.Grant;
import io.fencer.client.LockTimeoutException;
import io.fencer.core.FencingToken;
import io.fencer.core.InternalException;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.UnavailableException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.function.Consumer;

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

    /**
     * AcquireAll does not travel on the pipeline, behind the releases this session sent without waiting, so it
     * first waits for those of its locks to settle; a grant still found held under a token being released is
     * released again, as {@link DefaultFencedLock} does, and the locks asked for anew.
     */
    private Optional<MultiGrant> acquire(long waitMillis) {
        long deadlineNanos = System.nanoTime() + MILLISECONDS.toNanos(waitMillis);
        for (int round = 1; ; round++) {
            session.checkAlive();
            awaitReleases();
            long leftMillis = round == 1 ? waitMillis : WaitingAcquire.leftMillis(waitMillis, deadlineNanos);
            AcquireAllRequest.Builder request = AcquireAllRequest.newBuilder().setSessionId(session.id())
                    .setSessionSecret(session.secret()).addAllLocks(names)
                    .setRequestId(session.client().requestIds().next());
            AcquireResponse response = WaitingAcquire.call(session, operation, names, leftMillis,
                    LocksGrpc.getAcquireAllMethod(), millis -> request.setWaitMillis(millis).build());
            if (!response.getAcquired()) {
                return Optional.empty();
            }
            List<FencingToken> tokens = tokens(response);
            List<String> sequencers = new ArrayList<>(tokens.size());
            for (int i = 0; i < tokens.size(); i++) {
                sequencers.add(Protos.sequencer(response.getTokens(i), tokens.get(i)));
            }
            List<DefaultGrant> made = session.handOut(tokens, sequencers);
            if (made != null) {
                return Optional.of(grants(made));
            }
            List<FencingToken> released = tokens.stream().filter(session::releasedAlready).toList();
            if (round == DefaultFencedLock.RELEASED_GRANT_ROUNDS_MAX) {
                throw new UnavailableException(operation + " was answered " + round + " times with grants this"
                        + " session released, " + released + ": the releases have not taken effect yet");
            }
            released.forEach(session::releaseAgain);
        }
    }

    private void awaitReleases() {
        try {
            session.awaitReleasesOf(names, session.router().callTimeoutNanos());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // the call then fails CANCELLED on the interrupted thread
        }
    }

    /** Returns the answer's tokens, one per lock in the order named, checked against the names. */
    private List<FencingToken> tokens(AcquireResponse response) {
        if (response.getTokensCount() != names.size()) {
            throw new InternalException(operation + " was answered with " + response.getTokensCount() + " tokens");
        }
        List<FencingToken> tokens = new ArrayList<>(names.size());
        for (int i = 0; i < names.size(); i++) {
            FencingToken token = Protos.token(response.getTokens(i));
            if (!token.lock().equals(names.get(i))) {
                throw new InternalException(operation + " was answered with token " + token + " for lock '"
                        + names.get(i) + "'");
            }
            tokens.add(token);
        }
        return tokens;
    }

    private MultiGrant grants(List<DefaultGrant> grants) {
        session.checkHandOut(grants);
        List<Grant> held = List.copyOf(grants);
        return new MultiGrant() {
            @Override
            public List<Grant> grants() {
                return held;
            }

            @Override
            public void close() {
                endAll(held, Grant::close);
            }

            @Override
            public void release() {
                endAll(held, Grant::release);
            }
        };
    }

    /** Ends every grant of {@code held} with {@code end}, then throws the first failure, if any. */
    private static void endAll(List<Grant> held, Consumer<Grant> end) {
        RuntimeException first = null;
        for (Grant grant : held) {
            try {
                end.accept(grant);
            } catch (RuntimeException e) {
                first = first == null ? e : first;
            }
        }
        if (first != null) {
            throw first;
        }
    }

    @Override
    public String toString() {
        return "FencedMultiLock[" + names + ", session " + session.id() + "]";
    }
}
