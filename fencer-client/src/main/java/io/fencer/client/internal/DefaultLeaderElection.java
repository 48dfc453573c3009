package io.fencer.client.internal;

import io.fencer.client.LeaderElection;
import io.fencer.client.Leadership;
import io.fencer.client.LockStatus;
import java.time.Duration;
import java.util.Optional;

/** A leader election over one lock, campaigned through one session: the leader is the lock's holder. */
final class DefaultLeaderElection implements LeaderElection {
    private final DefaultSession session;
    private final DefaultFencedLock lock;

    DefaultLeaderElection(DefaultSession session, String name) {
        this.session = session;
        this.lock = new DefaultFencedLock(session, name);
    }

    @Override
    public String name() {
        return lock.name();
    }

    @Override
    public Leadership campaign(Duration wait) {
        return new DefaultLeadership(session, lock.acquire(wait));
    }

    @Override
    public Optional<Leadership> tryCampaign() {
        return lock.tryAcquire().map(grant -> new DefaultLeadership(session, grant));
    }

    @Override
    public Optional<LockStatus> leader() {
        LockStatus status = session.client().describe(lock.name());
        return status.holder() == null ? Optional.empty() : Optional.of(status);
    }

    @Override
    public String toString() {
        return "LeaderElection[" + lock.name() + ", session " + session.id() + "]";
    }
}
