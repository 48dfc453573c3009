package io.fencer.client;

import io.fencer.core.FencingToken;
import java.util.concurrent.CompletionStage;

/**
 * One term as leader. The term ends on {@link #close()}, when an operator revokes it, or when the session ends. A
 * session campaigning again while it leads gets another Leadership of the same term: they end together.
 */
public interface Leadership extends AutoCloseable {

    /** Returns the term's epoch: its fencing token value, greater than every earlier term's. */
    long epoch();

    /** Returns the term's fencing token, to carry with every action the leader takes. */
    FencingToken token();

    /**
     * Returns the term's token in its wire form as the lock service sent it (signed when it signs); see
     * {@link Grant#sequencer()}.
     */
    String sequencer();

    /**
     * Returns a stage that completes when this term is known to be over: resigned, revoked by an operator (learnt
     * from the session's next keepalive answer, as {@link Grant#lost()} is), or its session ended.
     */
    CompletionStage<Void> ended();

    /** Resigns: the next candidate in line is elected. */
    @Override
    void close();
}
