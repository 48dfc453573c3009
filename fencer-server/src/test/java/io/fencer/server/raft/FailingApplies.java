package io.fencer.server.raft;

import io.fencer.core.Ticker;
import io.fencer.lock.Command;
import io.fencer.lock.Limits;
import java.util.function.Supplier;

/**
 * State machines whose apply of one command fails as a bug in the state machine would (it throws), for the tests of
 * the halt in any package: the seam is package-private in production.
 */
public final class FailingApplies {
    private FailingApplies() {}

    /** Returns a state machine that throws {@code failure} whenever it applies an Acquire of {@code lock}. */
    public static RaftLockStateMachine onAcquireOf(String lock, Limits limits, Ticker ticker,
            Supplier<? extends RuntimeException> failure) {
        return new RaftLockStateMachine(limits, ticker, (machine, command) -> {
            if (command instanceof Command.Acquire acquire && acquire.lock().equals(lock)) {
                throw failure.get();
            }
            return machine.apply(command);
        });
    }
}
