package io.fencer.client.internal;

import io.fencer.client.LeaderElection;
import io.fencer.client.Leadership;
import io.fencer.client.LockEvent;
import io.fencer.client.LockStatus;
import io.fencer.client.Watch;
import io.fencer.client.WatchListener;
import io.fencer.core.FencerException;
import io.fencer.core.FencingToken;
import io.fencer.core.UnavailableException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;

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

    /**
     * Watches the lock first, then reads its state once the watch has started (a linearizable read, so it reflects
     * at least every event before the watch's start): events that state already reflects are recognised by their
     * token, as terms only increase, so none is applied twice and none is missed.
     */
    @Override
    public Watch observe(Consumer<Optional<FencingToken>> leader) {
        Observer observer = new Observer(Objects.requireNonNull(leader, "leader"));
        DefaultFencerClient client = session.client();
        Watch watch = client.watch(lock.name(), observer);
        try {
            ((DefaultWatch) watch).started().get(client.router().callTimeoutNanos(), TimeUnit.NANOSECONDS);
            observer.begin(client.describe(lock.name()));
        } catch (ExecutionException e) {
            watch.close();
            throw e.getCause() instanceof FencerException error ? error
                    : new UnavailableException("observing " + lock.name() + " failed: " + e.getCause());
        } catch (TimeoutException e) {
            watch.close();
            throw new UnavailableException("no peer started a watch of " + lock.name() + " within the call timeout");
        } catch (InterruptedException e) {
            watch.close();
            Thread.currentThread().interrupt();
            throw new UnavailableException("interrupted while starting to observe " + lock.name());
        } catch (RuntimeException e) {
            watch.close();
            throw e;
        }
        return watch;
    }

    /** Turns the lock's events into leader changes; events before the first state read wait for it. */
    private final class Observer implements WatchListener {
        private final Consumer<Optional<FencingToken>> leader;
        private final List<LockEvent> early = new ArrayList<>(); // guarded by this, until begun
        private boolean begun; // guarded by this
        private FencingToken current; // guarded by this: the leader's term, or null
        private long lastToken; // guarded by this: the highest term known

        Observer(Consumer<Optional<FencingToken>> leader) {
            this.leader = leader;
        }

        synchronized void begin(LockStatus status) {
            current = status.holder();
            lastToken = Math.max(status.lastToken(), current == null ? 0 : current.value());
            begun = true;
            leader.accept(Optional.ofNullable(current));
            early.forEach(this::apply);
            early.clear();
        }

        @Override
        public synchronized void onEvent(LockEvent event) {
            if (!event.lock().equals(lock.name())) {
                return; // the watch is by prefix: "jobs" also sees "jobs-2"
            }
            if (!begun) {
                early.add(event);
                return;
            }
            apply(event);
        }

        private void apply(LockEvent event) {
            FencingToken token = event.token();
            if (event.kind() == LockEvent.Kind.GRANTED && token.value() > lastToken) {
                lastToken = token.value();
                current = token;
                leader.accept(Optional.of(token));
            } else if ((event.kind() == LockEvent.Kind.RELEASED || event.kind() == LockEvent.Kind.EXPIRED)
                    && current != null && token.value() == current.value()) {
                current = null;
                leader.accept(Optional.empty());
            }
        }
    }

    @Override
    public String toString() {
        return "LeaderElection[" + lock.name() + ", session " + session.id() + "]";
    }
}
