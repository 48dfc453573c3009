package io.fencer.server.http;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import io.fencer.api.v1.LockEvent;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.WatchRequest;
import io.fencer.server.net.HttpCall;
import io.grpc.Channel;
import io.grpc.stub.ClientCallStreamObserver;
import io.grpc.stub.ClientResponseObserver;
import java.util.Locale;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The console's event feed: each poll opens a {@code Locks.Watch} of the page's prefix from the position the page asks
 * for (0 = from now), as the caller's identity (so {@code read} on the whole prefix is checked by the service), takes what the peer's
 * history holds from there for a short while, and answers those events with the position to ask for next. A page that
 * polls every second thus sees every event once, in log order, and resumes after a reload where its position says;
 * a position that left the history answers {@code out_of_range}, and the page starts again from now.
 */
final class ConsoleEvents {
    /** The most events one poll answers; the page asks again at once for the rest. */
    static final int EVENTS_PER_POLL_MAX = 256;
    /** How long a poll collects after the stream started: the history is in memory, it comes at once. */
    static final long COLLECT_MILLIS = 300;
    /** The longest a poll may take in all, when the stream does not even start. */
    static final long POLL_MILLIS_MAX = 3_000;

    private final ScheduledExecutorService timers;

    ConsoleEvents(ScheduledExecutorService timers) {
        this.timers = timers;
    }

    /** Answers the events of locks under {@code prefix} from position ({@code revision}, {@code ordinal}). */
    void poll(HttpCall call, Channel channel, String prefix, long revision, int ordinal) {
        WatchRequest request = WatchRequest.newBuilder().setPrefix(prefix).setFromRevision(revision)
                .setFromOrdinal(ordinal).build();
        Poll poll = new Poll(call);
        LocksGrpc.newStub(channel).watch(request, poll);
        timers.schedule(poll::finish, POLL_MILLIS_MAX, TimeUnit.MILLISECONDS);
    }

    /** One poll: the stream's messages until it has enough, its time is up, or it fails. */
    private final class Poll implements ClientResponseObserver<WatchRequest, LockEvent> {
        private final HttpCall call;
        private final JsonArray events = new JsonArray();
        private final AtomicBoolean done = new AtomicBoolean();
        private volatile ClientCallStreamObserver<WatchRequest> stream;
        private long nextRevision;
        private int nextOrdinal;
        private boolean started;

        Poll(HttpCall call) {
            this.call = call;
        }

        @Override
        public void beforeStart(ClientCallStreamObserver<WatchRequest> requestStream) {
            stream = requestStream;
        }

        @Override
        public void onNext(LockEvent event) {
            synchronized (this) {
                nextRevision = event.getRevision();
                nextOrdinal = event.getKind() == LockEvent.Kind.KIND_START ? event.getOrdinal()
                        : event.getOrdinal() + 1;
                if (event.getKind() == LockEvent.Kind.KIND_START) {
                    started = true;
                    timers.schedule(this::finish, COLLECT_MILLIS, TimeUnit.MILLISECONDS);
                    return;
                }
                events.add(json(event));
                if (events.size() < EVENTS_PER_POLL_MAX) {
                    return;
                }
            }
            finish();
        }

        @Override
        public void onError(Throwable failure) {
            if (done.compareAndSet(false, true)) {
                JsonObject json = ConsoleRoutes.failure(failure);
                ConsoleRoutes.answer(call, ConsoleRoutes.httpStatus(io.grpc.Status.fromThrowable(failure).getCode()),
                        json);
            }
        }

        @Override
        public void onCompleted() {
            finish();
        }

        void finish() {
            if (!done.compareAndSet(false, true)) {
                return;
            }
            ClientCallStreamObserver<WatchRequest> current = stream;
            if (current != null) {
                current.cancel("the console's poll is answered", null);
            }
            JsonObject json = new JsonObject();
            synchronized (this) {
                if (!started) {
                    ConsoleRoutes.answer(call, 503, ConsoleRoutes.failure(io.grpc.Status.UNAVAILABLE
                            .withDescription("the watch did not start in time").asRuntimeException()));
                    return;
                }
                json.add("events", events.deepCopy());
                json.addProperty("revision", nextRevision);
                json.addProperty("ordinal", nextOrdinal);
            }
            ConsoleRoutes.answer(call, 200, json);
        }
    }

    static JsonObject json(LockEvent event) {
        JsonObject json = new JsonObject();
        json.addProperty("revision", event.getRevision());
        json.addProperty("ordinal", event.getOrdinal());
        json.addProperty("kind", event.getKind().name().replace("KIND_", "").toLowerCase(Locale.ROOT));
        json.addProperty("lock", event.getLock());
        if (event.hasToken()) {
            json.addProperty("token", event.getToken().getValue());
        }
        json.addProperty("sessionId", event.getSessionId());
        if (event.getEndCause() != io.fencer.api.v1.EndCause.END_CAUSE_UNSPECIFIED) {
            json.addProperty("endCause", event.getEndCause().name().replace("END_CAUSE_", "").toLowerCase(Locale.ROOT));
        }
        if (!event.getRevokedBy().isEmpty()) {
            json.addProperty("revokedBy", event.getRevokedBy());
        }
        if (!event.getHolderIdentity().isEmpty()) {
            json.addProperty("holderIdentity", event.getHolderIdentity());
        }
        return json;
    }
}
