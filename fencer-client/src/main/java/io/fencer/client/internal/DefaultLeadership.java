package io.fencer.client.internal;

import io.fencer.client.Grant;
import io.fencer.client.Leadership;
import io.fencer.core.FencingToken;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * One term as leader: a grant of the election's lock. The term ends when resigned, when an operator revokes the
 * grant, or when its session ends; each way {@link #ended()} completes, once.
 */
final class DefaultLeadership implements Leadership {
    private final Grant grant;
    private final CompletableFuture<Void> ended = new CompletableFuture<>();
    private final CompletionStage<Void> endedView = ended.minimalCompletionStage();

    DefaultLeadership(DefaultSession session, Grant grant) {
        this.grant = grant;
        session.ended().whenComplete((loss, failure) -> ended.complete(null));
        // A revoked grant ends the term while the session lives on: the lock passes to the next candidate.
        grant.lost().whenComplete((loss, failure) -> ended.complete(null));
    }

    @Override
    public long epoch() {
        return grant.token().value();
    }

    @Override
    public FencingToken token() {
        return grant.token();
    }

    @Override
    public String sequencer() {
        return grant.sequencer();
    }

    @Override
    public CompletionStage<Void> ended() {
        return endedView;
    }

    /** Resigns by releasing the lock. The term is over for this process even when the release fails. */
    @Override
    public void close() {
        try {
            grant.close();
        } finally {
            ended.complete(null);
        }
    }

    @Override
    public String toString() {
        return "Leadership[" + grant.token() + (ended.isDone() ? ", ended" : "") + "]";
    }
}
