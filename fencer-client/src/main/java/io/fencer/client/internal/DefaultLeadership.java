package io.fencer.client.internal;

import io.fencer.client.Grant;
import io.fencer.client.Leadership;
import io.fencer.core.FencingToken;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * One term as leader: a grant of the election's lock. The term ends when resigned, when an operator revokes the
 * grant, or when its session ends; each way {@link #ended()} completes, once. A session campaigning again while it
 * leads is handed its term again, as another object of the same grant: one resigning ends the term for every object.
 */
final class DefaultLeadership implements Leadership {
    private final Grant grant;
    /** The term's end, shared by every Leadership of this term in the session ({@link DefaultSession#termEnded}). */
    private final CompletableFuture<Void> ended;
    private final CompletionStage<Void> endedView;

    DefaultLeadership(DefaultSession session, Grant grant) {
        this.grant = grant;
        this.ended = session.termEnded(grant.token());
        this.endedView = ended.minimalCompletionStage();
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

    /**
     * Resigns by releasing the lock. The term is over for this process even when the release fails, and for every
     * other Leadership of this term: the lock no longer belongs to them either.
     */
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
