package io.fencer.server.http;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.StoreGrpc;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.FuzzBudget;
import java.util.List;

/**
 * Fuzzes the Connect HTTP port's request path up to the service call, in-process: a route of Locks or Store, the
 * headers the port reads (content type, timeout), and a JSON body turned into the request's binary form by
 * {@link StrictJson} and protobuf's parser ({@link ConnectHttpServer#fromJson}). A body is converted or refused with
 * {@link InvalidArgumentException} (the port answers it as a Connect error); any other throwable, an allocation sized
 * by the body's claims, or a hang is a finding ({@link FuzzBudget}). The HTTP framing below (request line, headers,
 * body length) is Netty's {@code HttpServerCodec} under the port's byte limits, tested by {@code HttpBadInputTest}.
 */
class ConnectHttpFuzzTest {
    private static final List<ConnectRoute> ROUTES = ConnectRoute.of(List.of(LocksGrpc.getServiceDescriptor(),
            StoreGrpc.getServiceDescriptor())).values().stream()
            .filter(ConnectRoute::unary).sorted((a, b) -> a.path().compareTo(b.path())).toList();

    @FuzzTest(maxDuration = "10s")
    void fromJson_anyBody_convertsOrRefuses(FuzzedDataProvider data) throws Exception {
        ConnectRoute route = ROUTES.get(data.consumeInt(0, ROUTES.size() - 1));
        String contentType = data.consumeString(64);
        String timeout = data.consumeString(16);
        byte[] body = data.consumeRemainingAsBytes();
        FuzzBudget.check(body.length + 80, () -> {
            ConnectHttpServer.mediaType(contentType);
            long timeoutMillis = ConnectHttpServer.timeoutMillis(timeout);
            if (timeoutMillis < -1) {
                throw new AssertionError("timeout '" + timeout + "' read as " + timeoutMillis + " ms");
            }
            try {
                ConnectHttpServer.fromJson(route, body);
            } catch (InvalidArgumentException refused) {
                // the typed refusal, answered as INVALID_ARGUMENT
            }
        });
    }
}
