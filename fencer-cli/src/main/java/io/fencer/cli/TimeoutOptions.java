package io.fencer.cli;

import io.fencer.client.FencedStore;
import io.fencer.client.FencerClient;
import java.time.Duration;
import picocli.CommandLine.Option;

/**
 * The {@code --timeout} every client command takes: how long one call may take, retries on other peers included.
 * A command whose servers refuse every connection (none started, a mistyped port) or whose host is unknown fails
 * after {@link #UNREACHABLE_TIMEOUT} instead: nothing runs there, and a person at a shell should hear so at once.
 */
final class TimeoutOptions {
    /** How long a command waits for a server to accept a connection, when none has answered it yet. */
    static final Duration UNREACHABLE_TIMEOUT = Duration.ofSeconds(1);
    /** The longest --timeout: the client's own maximum for one call. */
    static final Duration TIMEOUT_MAX = Duration.ofHours(1);

    @Option(names = "--timeout", paramLabel = "DURATION", defaultValue = "10s",
            converter = Durations.Timeout.class,
            description = "How long one call to the service may take, retries through a leader change included "
                    + "(default: ${DEFAULT-VALUE}). When no server accepts a connection (refused, unknown host), "
                    + "the command fails after 1 s.")
    Duration timeout;

    /** Applies the timeouts to a lock service client. */
    FencerClient.Builder apply(FencerClient.Builder builder) {
        return builder.callTimeout(timeout).unreachableTimeout(UNREACHABLE_TIMEOUT);
    }

    /** Applies the timeouts to a store client. */
    FencedStore.Builder apply(FencedStore.Builder builder) {
        return builder.callTimeout(timeout).unreachableTimeout(UNREACHABLE_TIMEOUT);
    }
}
