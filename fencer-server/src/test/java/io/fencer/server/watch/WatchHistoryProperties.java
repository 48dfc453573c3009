package io.fencer.server.watch;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.api.v1.LockEvent;
import io.fencer.api.v1.LockEvent.Kind;
import io.fencer.lock.Applied;
import io.fencer.lock.Command;
import io.fencer.lock.Event;
import io.fencer.lock.Limits;
import io.fencer.lock.LockStateMachine;
import io.fencer.lock.LockView;
import io.fencer.lock.Result;
import io.fencer.lock.SecretHash;
import io.grpc.stub.ServerCallStreamObserver;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.RandomDistribution;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.statistics.Statistics;

/**
 * Random command sequences applied to the real state machine, in entries of random sizes at increasing revisions,
 * their events fed to a {@link WatchHub}: a watch split at a random step (with its client stalling at random) and
 * resumed later from the position after its last message sees exactly what an uninterrupted watch saw, and the
 * uninterrupted watch sees every grant and its end exactly once, in log order.
 */
class WatchHistoryProperties {
    private static final List<String> LOCKS = List.of("a1", "a2", "b/1");
    private static final List<String> PREFIXES = List.of("", "a", "b/");
    private static final SecretHash HASH = SecretHash.of("the properties' secret");
    private static final Limits LIMITS = new Limits(6, 8, 6, 8, 1_000, 60_000);
    private static final long FIRST_REVISION = 5;

    sealed interface Step {}

    record Open() implements Step {}

    record Close(int sessionPick) implements Step {}

    record Expire(int sessionPick, boolean lockDelay) implements Step {}

    record Acquire(int sessionPick, int lockPick, boolean waitQueued) implements Step {}

    record Cancel(int sessionPick, int lockPick) implements Step {}

    record Release(int lockPick) implements Step {}

    record EndDelay(int lockPick) implements Step {}

    /** Ends the current log entry; the next one is at revision + 1, or + 2 (an entry of Raft's own between). */
    record Commit(boolean gap) implements Step {}

    /** The split watch's client stops or starts reading. */
    record Stall(boolean reading) implements Step {}

    @Property(tries = 500)
    void splitAndResumedWatch_equalsTheUninterruptedOne(@ForAll("steps") List<Step> steps,
            @ForAll @IntRange(min = 0, max = 100) int splitPercent,
            @ForAll @IntRange(min = 0, max = 30) int resumeDelay, @ForAll @IntRange(min = 0, max = 2) int prefixPick) {
        String prefix = PREFIXES.get(prefixPick);
        int splitStep = steps.size() * splitPercent / 100;
        Run run = new Run();
        FakeStream uninterrupted = run.watch("", FIRST_REVISION, 0);
        FakeStream split = run.watch(prefix, FIRST_REVISION, 0);
        FakeStream resumed = null;
        int resumeStep = Math.min(steps.size(), splitStep + resumeDelay);
        for (int index = 0; index <= steps.size(); index++) {
            if (index == Math.min(splitStep, steps.size())) {
                split.cancel();
            }
            if (index == resumeStep && resumed == null) {
                long[] position = split.resumePosition();
                resumed = run.watch(prefix, position[0], (int) position[1]);
            }
            if (index < steps.size()) {
                Step step = steps.get(index);
                if (step instanceof Stall stall) {
                    split.setReading(stall.reading());
                    if (resumed != null) {
                        resumed.setReading(stall.reading());
                    }
                } else {
                    run.step(step);
                }
            }
        }
        run.closeEverything();
        resumed.setReading(true);

        List<LockEvent> expected = run.expected.stream().filter(event -> event.getLock().startsWith(prefix)).toList();
        List<LockEvent> joined = new ArrayList<>(split.events());
        joined.addAll(resumed.events());
        assertThat(uninterrupted.events()).as("every event, in log order").isEqualTo(run.expected);
        assertThat(joined).as("split at step %d, resumed at step %d", splitStep, resumeStep).isEqualTo(expected);
        assertThat(split.error).isNull();
        assertThat(resumed.error).isNull();
        assertGrantsEndOnceInOrder(uninterrupted.events());
        Statistics.label("events").collect(run.expected.size() / 10 * 10);
        Statistics.label("split inside the stream").collect(!split.events().isEmpty() && !resumed.events().isEmpty());
        // Guards against a generator that stops splitting streams in their middle. Measured: 34-40 % in ten runs of
        // 500 tries (39 % over 5,000); one run drew 29.6 % and failed the 30 % bound this had, a bound near the mean
        // rather than a generator gone wrong, so the bound sits about eight standard deviations under it.
        Statistics.label("split inside the stream").coverage(coverage -> coverage.check(true).percentage(p -> p > 20));
    }

    /** Every grant once, then its end once (every session is closed at the end), positions strictly increasing. */
    private static void assertGrantsEndOnceInOrder(List<LockEvent> events) {
        Map<String, Integer> granted = new HashMap<>();
        Map<String, Integer> ended = new HashMap<>();
        for (int index = 0; index < events.size(); index++) {
            LockEvent event = events.get(index);
            String token = event.getLock() + "#" + event.getToken().getValue();
            if (event.getKind() == Kind.KIND_GRANTED) {
                assertThat(granted.put(token, index)).as("%s granted twice", token).isNull();
            } else if (event.getKind() == Kind.KIND_RELEASED || event.getKind() == Kind.KIND_EXPIRED) {
                assertThat(granted).as("%s ended before its grant", token).containsKey(token);
                assertThat(ended.put(token, index)).as("%s ended twice", token).isNull();
            }
            if (index > 0) {
                LockEvent previous = events.get(index - 1);
                assertThat(previous.getRevision() < event.getRevision() || (previous.getRevision()
                        == event.getRevision() && previous.getOrdinal() < event.getOrdinal())).isTrue();
            }
        }
        assertThat(ended.keySet()).as("every grant ended").isEqualTo(granted.keySet());
    }

    @Provide
    Arbitrary<List<Step>> steps() {
        Arbitrary<Integer> pick = Arbitraries.integers().between(0, 7);
        Arbitrary<Integer> lock = Arbitraries.integers().between(0, LOCKS.size() - 1);
        Arbitrary<Step> step = Arbitraries.frequencyOf(
                net.jqwik.api.Tuple.of(3, Arbitraries.just(new Open())),
                net.jqwik.api.Tuple.of(1, pick.map(Close::new)),
                net.jqwik.api.Tuple.of(1, net.jqwik.api.Combinators.combine(pick, Arbitraries.of(true, false))
                        .as(Expire::new)),
                net.jqwik.api.Tuple.of(6, net.jqwik.api.Combinators.combine(pick, lock, Arbitraries.of(true, false))
                        .as(Acquire::new)),
                net.jqwik.api.Tuple.of(1, net.jqwik.api.Combinators.combine(pick, lock).as(Cancel::new)),
                net.jqwik.api.Tuple.of(3, lock.map(Release::new)),
                net.jqwik.api.Tuple.of(1, lock.map(EndDelay::new)),
                net.jqwik.api.Tuple.of(4, Arbitraries.of(true, false).map(Commit::new)),
                net.jqwik.api.Tuple.of(1, Arbitraries.of(true, true, false).map(Stall::new)));
        return step.list().ofMinSize(20).ofMaxSize(150).withSizeDistribution(RandomDistribution.uniform());
    }

    /** The state machine, the hub fed by it, and the events expected from it, entry by entry. */
    private static final class Run {
        final LockStateMachine machine = new LockStateMachine(LIMITS);
        final WatchHub hub = new WatchHub(new WatchLimits(10, 100_000), Runnable::run);
        final List<Long> sessions = new ArrayList<>();
        final List<LockEvent> expected = new ArrayList<>();
        List<Event> entry = new ArrayList<>();
        long revision = FIRST_REVISION;
        int requests;

        Run() {
            hub.onStateLoaded(FIRST_REVISION - 1); // as a peer that starts from a snapshot
        }

        FakeStream watch(String prefix, long fromRevision, int fromOrdinal) {
            FakeStream stream = new FakeStream();
            hub.watch(prefix, fromRevision, fromOrdinal, stream, new WatchHub.Watcher("tester", 1_000));
            return stream;
        }

        void step(Step step) {
            if (step instanceof Commit commit) {
                commit(commit.gap());
                return;
            }
            Optional<Command> command = command(step);
            command.ifPresent(this::apply);
        }

        private Optional<Command> command(Step step) {
            if (step instanceof Open) {
                return Optional.of(new Command.OpenSession("", 60_000, "tester", HASH));
            }
            if (sessions.isEmpty() && !(step instanceof Release) && !(step instanceof EndDelay)) {
                return Optional.empty();
            }
            if (step instanceof Close close) {
                return Optional.of(new Command.CloseSession(session(close.sessionPick()), HASH));
            } else if (step instanceof Expire expire) {
                return Optional.of(new Command.ExpireSession(session(expire.sessionPick()), expire.lockDelay()));
            } else if (step instanceof Acquire acquire) {
                return Optional.of(new Command.Acquire(session(acquire.sessionPick()), HASH,
                        LOCKS.get(acquire.lockPick()), "r" + requests++, acquire.waitQueued()));
            } else if (step instanceof Cancel cancel) {
                return Optional.of(new Command.CancelWait(session(cancel.sessionPick()), HASH,
                        LOCKS.get(cancel.lockPick()), null));
            } else if (step instanceof Release release) {
                String lock = LOCKS.get(release.lockPick());
                return machine.describe(lock).filter(view -> view.holder() != null)
                        .map(view -> new Command.Release(view.holderSessionId(), HASH, lock, view.holder().value()));
            } else if (step instanceof EndDelay end) {
                return Optional.of(new Command.EndLockDelay(LOCKS.get(end.lockPick())));
            }
            throw new IllegalArgumentException("unknown step " + step);
        }

        private long session(int pick) {
            return sessions.get(pick % sessions.size());
        }

        private void apply(Command command) {
            Applied applied = machine.apply(command);
            if (applied.result() instanceof Result.SessionOpened opened) {
                sessions.add(opened.sessionId());
            }
            if (applied.result() instanceof Result.SessionEnded ended) {
                sessions.remove(Long.valueOf(ended.sessionId()));
            }
            entry.addAll(applied.events());
        }

        void commit(boolean gap) {
            int ordinal = 0;
            for (Event event : entry) {
                Optional<LockEvent> wire = LockEvents.of(event, revision, ordinal).map(LockEvents::wire);
                if (wire.isPresent()) {
                    expected.add(wire.get());
                    ordinal++;
                }
            }
            hub.onApplied(revision, entry);
            entry = new ArrayList<>();
            revision += gap ? 2 : 1;
        }

        /** Closes every session (ending every grant and wait) and ends every lock-delay, then commits. */
        void closeEverything() {
            for (Long session : List.copyOf(sessions)) {
                apply(new Command.CloseSession(session, HASH));
            }
            for (String lock : LOCKS) {
                machine.describe(lock).filter(LockView::delayed)
                        .ifPresent(view -> apply(new Command.EndLockDelay(lock)));
            }
            commit(false);
        }
    }

    /** A server stream whose client reads when told; it records what the hub sent. */
    private static final class FakeStream extends ServerCallStreamObserver<LockEvent> {
        final List<LockEvent> received = new ArrayList<>();
        Throwable error;
        boolean reading = true;
        boolean cancelled;
        Runnable onReady;
        Runnable onCancel;

        /** The lock events received, without the start message. */
        List<LockEvent> events() {
            return received.stream().filter(event -> event.getKind() != Kind.KIND_START).toList();
        }

        /** The position after the last message received: where a resume starts. */
        long[] resumePosition() {
            LockEvent last = received.get(received.size() - 1);
            int skip = last.getKind() == Kind.KIND_START ? 0 : 1;
            return new long[] {last.getRevision(), last.getOrdinal() + skip};
        }

        void setReading(boolean reading) {
            this.reading = reading;
            if (reading && onReady != null && !cancelled) {
                onReady.run();
            }
        }

        void cancel() {
            cancelled = true;
            onCancel.run();
        }

        @Override
        public boolean isReady() {
            return reading && !cancelled;
        }

        @Override
        public void onNext(LockEvent event) {
            if (cancelled) {
                throw new IllegalStateException("call already cancelled");
            }
            received.add(event);
        }

        @Override
        public void onError(Throwable failure) {
            error = failure;
        }

        @Override
        public void onCompleted() {
            error = new IllegalStateException("completed");
        }

        @Override
        public boolean isCancelled() {
            return cancelled;
        }

        @Override
        public void setOnCancelHandler(Runnable handler) {
            onCancel = handler;
        }

        @Override
        public void setOnReadyHandler(Runnable handler) {
            onReady = handler;
        }

        @Override
        public void setCompression(String compression) {}

        @Override
        public void disableAutoInboundFlowControl() {}

        @Override
        public void request(int count) {}

        @Override
        public void setMessageCompression(boolean enable) {}
    }
}
