package io.fencer.server.rpc;

import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * The flow-control counters of one kind of stream ({@code Locks.Pipeline}, {@code Store.Pipeline},
 * {@code Locks.KeepAlive}), shared by all its streams and exported as Prometheus metrics tagged {@code stream}:
 * requests read, pauses (a stream stopped reading because its client was not reading its answers) and the streams
 * paused now, answers queued for the transport now and at their peak, and streams ended for holding too many.
 *
 * <p>Why counters and not a log line: a client that stops reading is an operating condition, not a bug, and the
 * peak backlog is what shows that the server's memory per stream stayed bounded. Only {@link #requestRead} runs
 * per message (one {@link LongAdder} cell); the rest runs when a stream's answers back up. Thread-safe.
 */
public final class StreamFlow {
    private final String stream;
    private final LongAdder requestsRead = new LongAdder();
    private final LongAdder pauses = new LongAdder();
    private final AtomicLong streamsPaused = new AtomicLong();
    private final AtomicLong answersQueued = new AtomicLong();
    private final AtomicLong answersQueuedPeak = new AtomicLong();
    private final AtomicLong answerBytesQueuedPeak = new AtomicLong();
    private final LongAdder backlogEnds = new LongAdder();

    /** Returns the counters of the streams called {@code stream}, e.g. {@code locks.pipeline}. */
    public StreamFlow(String stream) {
        this.stream = stream;
    }

    /** Returns the name of this kind of stream, e.g. {@code locks.pipeline}. */
    public String stream() {
        return stream;
    }

    /** Exports the counters to {@code registry}, tagged {@code stream=<name>}. */
    public void register(MeterRegistry registry) {
        FunctionCounter.builder("fencer.stream.requests", requestsRead, LongAdder::sum).tag("stream", stream)
                .description("Requests read from streams of this kind").register(registry);
        FunctionCounter.builder("fencer.stream.pauses", pauses, LongAdder::sum).tag("stream", stream)
                .description("Times a stream stopped reading requests until its answers flow")
                .register(registry);
        FunctionCounter.builder("fencer.stream.backlog.ends", backlogEnds, LongAdder::sum).tag("stream", stream)
                .description("Streams ended RESOURCE_EXHAUSTED because their client left too many answers unread")
                .register(registry);
        Gauge.builder("fencer.streams.paused", streamsPaused, AtomicLong::get).tag("stream", stream)
                .description("Open streams of this kind not reading requests until their client reads answers")
                .strongReference(true).register(registry);
        Gauge.builder("fencer.stream.answers.queued", answersQueued, AtomicLong::get).tag("stream", stream)
                .description("Answers waiting for the transport, over all open streams of this kind")
                .strongReference(true).register(registry);
        Gauge.builder("fencer.stream.answers.queued.peak", answersQueuedPeak, AtomicLong::get).tag("stream", stream)
                .description("The most answers one stream of this kind has held for its transport")
                .strongReference(true).register(registry);
        Gauge.builder("fencer.stream.answer.bytes.queued.peak", answerBytesQueuedPeak, AtomicLong::get)
                .tag("stream", stream).description("The most answer bytes one stream has held for its transport")
                .strongReference(true).register(registry);
    }

    /** Counts one request read from a stream. */
    void requestRead() {
        requestsRead.increment();
    }

    /** Counts one stream that stopped reading requests until its client reads; {@link #resumed} undoes it. */
    void paused() {
        pauses.increment();
        streamsPaused.incrementAndGet();
    }

    /** Counts one paused stream that reads again, or ended while paused. */
    void resumed() {
        streamsPaused.decrementAndGet();
    }

    /** Records that one stream now holds {@code answers} queued answers of {@code bytes} bytes, one more. */
    void answerQueued(int answers, long bytes) {
        answersQueued.incrementAndGet();
        answersQueuedPeak.accumulateAndGet(answers, Math::max);
        answerBytesQueuedPeak.accumulateAndGet(bytes, Math::max);
    }

    /** Records that {@code answers} queued answers left a stream's queue: taken by the transport, or dropped. */
    void answersDequeued(int answers) {
        answersQueued.addAndGet(-answers);
    }

    /** Counts one stream ended because its client left too many answers unread. */
    void endedForBacklog() {
        backlogEnds.increment();
    }

    /** Returns the requests read so far from streams of this kind. */
    public long requestsRead() {
        return requestsRead.sum();
    }

    /** Returns how often a stream of this kind stopped reading because its client was not reading. */
    public long pauses() {
        return pauses.sum();
    }

    /** Returns how many open streams of this kind are not reading until their client reads. */
    public long streamsPaused() {
        return streamsPaused.get();
    }

    /** Returns the answers waiting for the transport now, over all open streams of this kind. */
    public long answersQueued() {
        return answersQueued.get();
    }

    /** Returns the most answers one stream of this kind has held for its transport. */
    public long answersQueuedPeak() {
        return answersQueuedPeak.get();
    }

    /** Returns the most answer bytes one stream of this kind has held for its transport. */
    public long answerBytesQueuedPeak() {
        return answerBytesQueuedPeak.get();
    }

    /** Returns how many streams of this kind were ended for leaving too many answers unread. */
    public long backlogEnds() {
        return backlogEnds.sum();
    }
}
