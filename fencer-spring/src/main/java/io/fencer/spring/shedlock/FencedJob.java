package io.fencer.spring.shedlock;

import io.fencer.client.SessionLoss;
import io.fencer.core.FencingToken;
import java.time.Duration;
import java.util.concurrent.CompletionStage;

/**
 * A job that runs under a Fencer lock: its token, and how it learns that its lease was lost.
 *
 * <p><b>How a lost lease reaches the job: a flag it polls, never an interrupt.</b> {@link #leaseLost()} turns true
 * once the lock's session is lost: the service said it expired, or keepalives went unanswered until the local lease
 * ended (counted to fail closed, see {@link io.fencer.client.Session}); {@link #lost()} completes then as well. The
 * job's thread is not interrupted: it belongs to the application's scheduler pool, and an interrupt landing in a JDBC
 * call or a library's wait does not stop a job cleanly. A long job polls {@link #leaseLost()} between steps and
 * stops when it turns true.
 *
 * <p>The flag cannot help a job that is paused (a GC pause, a stopped VM) when its lease ends: it resumes and writes
 * before it polls. That is what the token is for: the resource refuses it once another node's job has written
 * ({@link io.fencer.spring.jdbc.SpringJdbcFence}).
 */
public interface FencedJob {

    /** Returns the lock's name: the job's {@code @SchedulerLock(name = ...)}. */
    String lockName();

    /** Returns the token to carry with every write of this run. */
    FencingToken token();

    /** Returns the token's wire form as the service sent it (signed when the service signs tokens). */
    String sequencer();

    /** Returns true once the lock's lease is lost: this run no longer holds the lock and should stop. */
    boolean leaseLost();

    /** Returns how long the local lease has left, {@link Duration#ZERO} once lost. */
    Duration leaseRemaining();

    /** Returns a stage that completes, with why, when the lease is lost or the lock released. */
    CompletionStage<SessionLoss> lost();
}
