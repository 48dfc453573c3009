package io.fencer.server.auth;

import io.fencer.api.v1.CallError;
import io.fencer.api.v1.PipelineResponse;
import io.fencer.api.v1.StorePipelineResponse;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.Ticker;
import io.fencer.server.net.RefusalLog;
import io.fencer.server.rpc.Identities;
import io.grpc.ForwardingServerCall;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.Status;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Counts and logs the calls refused because of who called: PERMISSION_DENIED (the ACL) and UNAUTHENTICATED (a
 * credential that did not prove itself: a session secret, a token's signature), as the Prometheus counter
 * {@code fencer_calls_refused_total{reason="permission_denied"|"unauthenticated"}}, and one log line per identity
 * per {@link #LOG_INTERVAL} at most (see {@link RefusalLog}).
 *
 * <p>Why an interceptor rather than a count where each refusal is made: it sees every answer that leaves the
 * server, whichever handler refused it, as the unary call's status, the stream's status, or the error of one call
 * carried on a Pipeline stream. Install it inside {@link Identities#interceptor()}, whose identity it reads.
 */
public final class RefusedCalls implements ServerInterceptor {
    /** The shortest time between two log lines about the refusals of one identity. */
    static final Duration LOG_INTERVAL = Duration.ofSeconds(10);
    /** The most identities whose log intervals are remembered. */
    static final int LOGGED_IDENTITIES_MAX = 10_000;
    private static final Logger LOG = LoggerFactory.getLogger(RefusedCalls.class);

    private final Counter permissionDenied;
    private final Counter unauthenticated;
    private final RefusalLog log;

    public RefusedCalls(MeterRegistry registry, Ticker ticker) {
        permissionDenied = counter(registry, "permission_denied");
        unauthenticated = counter(registry, "unauthenticated");
        log = new RefusalLog(ticker, LOG_INTERVAL, LOGGED_IDENTITIES_MAX);
    }

    private static Counter counter(MeterRegistry registry, String reason) {
        return Counter.builder("fencer.calls.refused")
                .description("Calls refused for their caller: denied by the ACL, or not authenticated")
                .tag("reason", reason).register(registry);
    }

    @Override
    public <RequestT, ResponseT> ServerCall.Listener<RequestT> interceptCall(ServerCall<RequestT, ResponseT> call,
            Metadata headers, ServerCallHandler<RequestT, ResponseT> next) {
        String identity = Identities.current();
        String method = call.getMethodDescriptor().getBareMethodName();
        return next.startCall(new ForwardingServerCall.SimpleForwardingServerCall<>(call) {
            @Override
            public void sendMessage(ResponseT message) {
                CallError error = pipelinedError(message);
                if (error != null) {
                    refused(Status.fromCodeValue(error.getStatusCode()).getCode(), identity, method,
                            error.getDescription());
                }
                super.sendMessage(message);
            }

            @Override
            public void close(Status status, Metadata trailers) {
                refused(status.getCode(), identity, method, status.getDescription());
                super.close(status, trailers);
            }
        }, headers);
    }

    /** Returns the error of one pipelined call's answer, or null when {@code message} is no such error. */
    private static CallError pipelinedError(Object message) {
        if (message instanceof PipelineResponse response && response.hasError()) {
            return response.getError();
        }
        if (message instanceof StorePipelineResponse response && response.hasError()) {
            return response.getError();
        }
        return null;
    }

    private void refused(Status.Code code, String identity, String method, String description) {
        String reason;
        if (code == Status.Code.PERMISSION_DENIED) {
            permissionDenied.increment();
            reason = "PERMISSION_DENIED";
        } else if (code == Status.Code.UNAUTHENTICATED) {
            unauthenticated.increment();
            reason = "UNAUTHENTICATED";
        } else {
            return;
        }
        long suppressed = log.admit(identity);
        if (suppressed >= 0) {
            LOG.warn("refused {} call of identity '{}' ({}): {}{}", method,
                    InvalidArgumentException.printable(identity), reason, description,
                    suppressed == 0 ? "" : " (and " + suppressed + " more refusals of this identity since the "
                            + "last line, not logged)");
        }
    }
}
