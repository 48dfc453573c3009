package io.fencer.cli;

import io.fencer.client.FencerClient;
import io.fencer.client.LockEvent;
import io.fencer.client.Watch;
import io.fencer.client.WatchListener;
import io.fencer.client.WatchPosition;
import io.fencer.core.FencerException;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import picocli.CommandLine.Command;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;
import picocli.CommandLine.TypeConversionException;

/**
 * {@code fencer lock watch [PREFIX]}: prints the lock events under a prefix as they happen, one line each (one JSON
 * object a line with {@code --json}), flushed at once, until SIGINT/SIGTERM (exit 0) or until the watch ends for good
 * (exit 1: its position left the server's history; exit 6: permission denied). Each line names its position and the
 * position to resume after it ({@code next}): {@code --from NEXT} in a new process continues exactly there.
 */
@Command(name = "watch", mixinStandardHelpOptions = true,
        description = {"Prints lock events (queued, granted, released, expired, wait ended) as they happen, "
                + "resuming by itself on another peer, until SIGINT/SIGTERM (exit 0)."})
final class LockWatchCommand implements Callable<Integer> {
    @Parameters(index = "0", arity = "0..1", paramLabel = "PREFIX", defaultValue = "",
            description = "Only locks whose names start with it (default: all).")
    String prefix;

    @Option(names = "--json", description = "Print one JSON object a line.")
    boolean json;

    @Option(names = "--from", paramLabel = "REVISION[:ORDINAL]", converter = PositionConverter.class,
            description = "Start at this position (a line's 'next' resumes after it); default: from now.")
    WatchPosition from;

    @Mixin
    ClientOptions client;

    @ParentCommand
    LockCommand parent;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws InterruptedException {
        CompletionStage<String> stopRequested = parent.main.stopSignals();
        PrintWriter out = spec.commandLine().getOut();
        CompletableFuture<FencerException> ended = new CompletableFuture<>();
        WatchListener listener = new WatchListener() {
            @Override
            public void onEvent(LockEvent event) {
                synchronized (out) {
                    out.println(json ? toJson(event) : text(event));
                    out.flush();
                }
            }

            @Override
            public void onEnded(FencerException error) {
                ended.complete(error);
            }
        };
        try (FencerClient fencer = client.connect();
                Watch watch = fencer.watch(prefix, from == null ? WatchPosition.NOW : from, listener)) {
            CompletableFuture.anyOf(ended, stopRequested.toCompletableFuture()).get();
        } catch (ExecutionException e) {
            throw new IllegalStateException(e.getCause());
        }
        FencerException error = ended.getNow(null);
        if (error != null) {
            throw error;
        }
        return Main.EXIT_OK;
    }

    /** Returns the JSON object of one event. */
    static Json toJson(LockEvent event) {
        return Json.object()
                .add("revision", event.position().revision())
                .add("ordinal", event.position().ordinal())
                .add("next", event.position().next().toString())
                .add("kind", event.kind().name())
                .add("lock", event.lock())
                .add("token", event.token() == null ? null : Long.valueOf(event.token().value()))
                .add("sequencer", event.token() == null ? null : event.token().sequencer())
                .addUnsigned("sessionId", event.sessionId())
                .add("endCause", event.endCause())
                .add("revokedBy", event.revokedBy())
                .add("holderIdentity", event.holderIdentity());
    }

    /** Returns one event as a line of text: {@code 12:0 GRANTED orders#3 session 7 identity 'worker-3'}. */
    static String text(LockEvent event) {
        String subject = event.token() != null ? event.token().toString() : event.lock();
        return event.position() + " " + event.kind() + " " + subject + " session "
                + Long.toUnsignedString(event.sessionId()) + (event.endCause() == null ? "" : " " + event.endCause())
                + (event.revokedBy() == null ? "" : " by " + event.revokedBy())
                + (event.holderIdentity() == null ? "" : " identity '" + event.holderIdentity() + "'");
    }

    /** Reads {@code REVISION} or {@code REVISION:ORDINAL}. */
    static final class PositionConverter implements ITypeConverter<WatchPosition> {
        @Override
        public WatchPosition convert(String value) {
            try {
                return WatchPosition.parse(value);
            } catch (IllegalArgumentException e) {
                throw new TypeConversionException(e.getMessage());
            }
        }
    }
}
