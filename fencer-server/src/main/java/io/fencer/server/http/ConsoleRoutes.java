package io.fencer.server.http;

import com.google.common.util.concurrent.FutureCallback;
import com.google.common.util.concurrent.Futures;
import com.google.common.util.concurrent.ListenableFuture;
import com.google.common.util.concurrent.MoreExecutors;
import com.google.gson.Gson;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.fencer.api.errors.WireErrors;
import io.fencer.api.v1.AdminGrpc;
import io.fencer.api.v1.FencingToken;
import io.fencer.api.v1.ListPeersRequest;
import io.fencer.api.v1.ListPeersResponse;
import io.fencer.api.v1.ListRequest;
import io.fencer.api.v1.ListResponse;
import io.fencer.api.v1.LockInfo;
import io.fencer.api.v1.LocksGrpc;
import io.fencer.api.v1.PeerInfo;
import io.fencer.api.v1.PeersGrpc;
import io.fencer.api.v1.RevokeRequest;
import io.fencer.api.v1.RevokeResponse;
import io.fencer.api.v1.StatusRequest;
import io.fencer.api.v1.StatusResponse;
import io.fencer.api.v1.ValidateRequest;
import io.fencer.api.v1.ValidateResponse;
import io.fencer.api.v1.Waiter;
import io.fencer.core.InvalidArgumentException;
import io.fencer.server.net.HttpCall;
import io.fencer.server.rpc.Identities;
import io.fencer.server.rpc.InProcessEndpoint;
import io.grpc.Channel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Executor;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.BiPredicate;
import java.util.function.Consumer;

/**
 * The live web console at {@code /console} on the HTTP port: one page (HTML, CSS and a little JavaScript, served from
 * this jar, no third-party code) and the JSON calls it polls. Every call the console makes goes to the services
 * through the {@link InProcessEndpoint} as the caller's identity (its client certificate's CN, or anonymous), so the
 * console sees and does exactly what the caller may through the API: {@code read} to look (List, Validate, Status,
 * Peers.List), {@code admin} on the lock to revoke, checked by the Locks service itself. The revoke buttons are shown
 * only where the caller holds {@code admin} ({@code mayRevoke}), which decides what the page offers, never what the
 * server allows.
 *
 * <p>Routes: {@code GET /console} (the page), {@code GET /console/console.js} and {@code /console/console.css};
 * {@code POST /console/state} (locks, their holders' leases, waiters, the peer and the group), {@code POST
 * /console/events} (the Watch from a position, see {@link ConsoleEvents}), {@code POST /console/refusals} (the store's
 * recent refused writes from a position, see {@link #refusals}) and {@code POST /console/revoke}. The POSTs
 * take JSON and require the header {@code X-Fencer-Console}: a page of another origin cannot send it without a CORS
 * preflight, which this port never grants, so a forged cross-site form cannot revoke with the browser's client
 * certificate.
 */
final class ConsoleRoutes {
    static final String PREFIX = "/console";
    static final String HEADER = "X-Fencer-Console";
    /** The most locks the console shows: one List call's worth, each with one Validate of its holder. */
    static final int LOCKS_MAX = 200;
    /** The most waiters a lock's row names; the rest it counts (a lock may have 10,000). */
    static final int WAITERS_SHOWN_MAX = 20;
    /** How long the console's calls to the services may take. */
    static final long CALL_MILLIS_MAX = 5_000;
    private static final Gson GSON = new Gson();
    private static final String JSON = "application/json";
    /** No script but our own file, no frame around the page: names are shown as text, this keeps it so. */
    private static final Map<String, String> PAGE_HEADERS = Map.of(
            "Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
            "X-Content-Type-Options", "nosniff", "Cache-Control", "no-store", "Referrer-Policy", "no-referrer");

    private final InProcessEndpoint endpoint;
    private final BiPredicate<String, String> mayRevoke;
    private final BiPredicate<String, String> mayRead;
    /** The store's recent refusals, or null when this server hosts no store. */
    private final RecentRefusals refusals;
    private final Executor answers;
    private final ConsoleEvents events;
    private final byte[] page;
    private final byte[] script;
    private final byte[] style;

    /**
     * @param mayRevoke whether an identity holds {@code admin} on a lock: which revoke buttons to show
     * @param mayRead whether an identity holds {@code read} on a store scope: which refusals it sees
     * @param refusals the store's recent refusals, or null when the server hosts no store
     * @param answers where the answers of the in-process calls are handled
     * @param timers ends each events poll
     */
    ConsoleRoutes(InProcessEndpoint endpoint, BiPredicate<String, String> mayRevoke,
            BiPredicate<String, String> mayRead, RecentRefusals refusals, Executor answers,
            ScheduledExecutorService timers) {
        this.endpoint = endpoint;
        this.mayRevoke = mayRevoke;
        this.mayRead = mayRead;
        this.refusals = refusals;
        this.answers = answers;
        this.events = new ConsoleEvents(timers);
        this.page = resource("console.html");
        this.script = resource("console.js");
        this.style = resource("console.css");
    }

    /** True for the paths this class serves. */
    static boolean serves(String path) {
        return path.equals(PREFIX) || path.startsWith(PREFIX + "/");
    }

    void handle(HttpCall call) {
        String path = call.path();
        String method = call.method();
        boolean get = "GET".equals(method) || "HEAD".equals(method);
        if (get && (path.equals(PREFIX) || path.equals(PREFIX + "/"))) {
            call.answer(200, "text/html; charset=utf-8", page, PAGE_HEADERS);
        } else if (get && path.equals(PREFIX + "/console.js")) {
            call.answer(200, "text/javascript; charset=utf-8", script, PAGE_HEADERS);
        } else if (get && path.equals(PREFIX + "/console.css")) {
            call.answer(200, "text/css; charset=utf-8", style, PAGE_HEADERS);
        } else if (!"POST".equals(method) || !List.of("/state", "/events", "/refusals", "/revoke")
                .contains(path.substring(PREFIX.length()))) {
            error(call, 404, "not_found", "the console has no " + method + " " + path);
        } else if (call.header(HEADER) == null) {
            error(call, 403, "permission_denied", "console calls carry the header " + HEADER
                    + " (a page of another origin cannot send it)");
        } else if (call.overflow() != HttpCall.Overflow.NONE || call.body().length > 4_096) {
            error(call, 413, "invalid_argument", "a console call's body is at most 4096 bytes");
        } else {
            post(call, path.substring(PREFIX.length()), body(call));
        }
    }

    private void post(HttpCall call, String route, JsonObject body) {
        if (body == null) {
            error(call, 400, "invalid_argument", "the body is not a JSON object");
            return;
        }
        Channel channel = endpoint.channelFor(call.tlsSession(), call.remoteAddress());
        String identity = Identities.of(call.tlsSession());
        try {
            route(call, route, body, channel, identity);
        } catch (InvalidArgumentException e) {
            answer(call, 400, failure(WireErrors.toStatusException(e)));
        }
    }

    private void route(HttpCall call, String route, JsonObject body, Channel channel, String identity) {
        switch (route) {
            case "/state" -> state(call, channel, identity, text(body, "prefix"));
            case "/events" -> events.poll(call, channel, text(body, "prefix"), number(body, "revision"),
                    (int) Math.min(number(body, "ordinal"), Integer.MAX_VALUE));
            case "/refusals" -> answer(call, 200, refusals(identity, text(body, "prefix"), number(body, "position")));
            default -> revoke(call, channel, text(body, "lock"), number(body, "token"));
        }
    }

    /** Answers the state: the caller, this peer, the group's peers, and the locks under {@code prefix}. */
    private void state(HttpCall call, Channel channel, String identity, String prefix) {
        JsonObject state = new JsonObject();
        state.addProperty("identity", identity);
        state.addProperty("serverTimeMillis", System.currentTimeMillis());
        ListenableFuture<StatusResponse> status = AdminGrpc.newFutureStub(channel)
                .withDeadlineAfter(CALL_MILLIS_MAX, TimeUnit.MILLISECONDS).status(StatusRequest.getDefaultInstance());
        ListenableFuture<ListPeersResponse> peers = PeersGrpc.newFutureStub(channel)
                .withDeadlineAfter(CALL_MILLIS_MAX, TimeUnit.MILLISECONDS).list(ListPeersRequest.getDefaultInstance());
        ListenableFuture<ListResponse> locks = LocksGrpc.newFutureStub(channel)
                .withDeadlineAfter(CALL_MILLIS_MAX, TimeUnit.MILLISECONDS)
                .list(ListRequest.newBuilder().setPrefix(prefix).setLimit(LOCKS_MAX).build());
        Futures.whenAllComplete(status, peers, locks).run(() -> {
            state.add("peer", outcome(status, ConsoleRoutes::peer));
            state.add("peers", outcome(peers, ConsoleRoutes::peers));
            try {
                ListResponse page = Futures.getDone(locks);
                List<LockInfo> listed = page.getLocksList();
                leases(channel, listed, leases -> {
                    state.add("locks", locks(identity, listed, leases));
                    state.addProperty("locksMore", page.getMore());
                    answer(call, 200, state);
                });
            } catch (Exception e) {
                state.add("locks", failure(e));
                answer(call, 200, state);
            }
        }, answers);
    }

    /**
     * Returns the store's refusals kept from {@code position} on (0: all kept) of the scopes under {@code prefix} that
     * {@code identity} may read, as the store's own Get would require: a refusal of a scope it may not read is left
     * out, as if it had not happened. Each is dated by its age ({@code ageMillis}) and, for readers of the JSON, by
     * this server's clock ({@code timeMillis}); the page places it in its feed by the age, whatever the two clocks say.
     */
    private JsonObject refusals(String identity, String prefix, long position) {
        JsonObject json = new JsonObject();
        JsonArray list = new JsonArray();
        json.add("refusals", list);
        if (refusals == null) {
            json.addProperty("store", false);
            json.addProperty("position", 0);
            return json;
        }
        RecentRefusals.Read read = refusals.from(position);
        long nowMillis = System.currentTimeMillis();
        for (RecentRefusals.Refusal refusal : read.refusals()) {
            if (!refusal.scope().startsWith(prefix) || !mayRead.test(identity, refusal.scope())) {
                continue;
            }
            long ageMillis = Math.max(0, TimeUnit.NANOSECONDS.toMillis(read.nowNanos() - refusal.atNanos()));
            JsonObject item = new JsonObject();
            item.addProperty("position", refusal.position());
            item.addProperty("scope", refusal.scope());
            item.addProperty("reason", refusal.reason());
            item.addProperty("presented", refusal.presented());
            item.addProperty("accepted", refusal.accepted());
            item.addProperty("ageMillis", ageMillis);
            item.addProperty("timeMillis", nowMillis - ageMillis);
            list.add(item);
        }
        json.addProperty("store", true);
        json.addProperty("position", read.next());
        return json;
    }

    /** Asks Validate for the lease of each held lock's holder, then hands the leases (-1: unknown) on. */
    private void leases(Channel channel, List<LockInfo> locks, Consumer<long[]> then) {
        long[] leases = new long[locks.size()];
        List<ListenableFuture<ValidateResponse>> validations = new ArrayList<>();
        for (LockInfo lock : locks) {
            validations.add(lock.hasHolder() ? LocksGrpc.newFutureStub(channel)
                    .withDeadlineAfter(CALL_MILLIS_MAX, TimeUnit.MILLISECONDS)
                    .validate(ValidateRequest.newBuilder().setToken(lock.getHolder()).build())
                    : Futures.immediateFuture(null));
        }
        Futures.whenAllComplete(validations).run(() -> {
            for (int i = 0; i < leases.length; i++) {
                try {
                    ValidateResponse validation = Futures.getDone(validations.get(i));
                    leases[i] = validation == null || validation.getStatus() != ValidateResponse.Status.CURRENT ? -1
                            : validation.getLeaseRemainingMillis();
                } catch (Exception e) {
                    leases[i] = -1;
                }
            }
            then.accept(leases);
        }, answers);
    }

    private JsonArray locks(String identity, List<LockInfo> locks, long[] leases) {
        JsonArray array = new JsonArray();
        for (int i = 0; i < locks.size(); i++) {
            LockInfo lock = locks.get(i);
            JsonObject json = new JsonObject();
            json.addProperty("lock", lock.getLock());
            if (lock.hasHolder()) {
                json.addProperty("token", lock.getHolder().getValue());
                json.addProperty("holderIdentity", lock.getHolderIdentity());
                json.addProperty("leaseRemainingMillis", leases[i]);
            }
            json.addProperty("shared", lock.getSharedHoldersTotal());
            json.addProperty("lastToken", lock.getLastToken());
            json.addProperty("delayed", lock.getDelayed());
            JsonArray waiters = new JsonArray();
            for (Waiter waiter : lock.getWaitersList().subList(0, Math.min(WAITERS_SHOWN_MAX,
                    lock.getWaitersCount()))) {
                waiters.add(waiter.getSessionId());
            }
            json.add("waiters", waiters);
            json.addProperty("waitersTotal", lock.getWaitersTotal());
            json.addProperty("canRevoke", lock.hasHolder() && mayRevoke.test(identity, lock.getLock()));
            array.add(json);
        }
        return array;
    }

    private static JsonObject peer(StatusResponse status) {
        JsonObject json = new JsonObject();
        json.addProperty("id", status.getPeerId());
        json.addProperty("leader", status.getLeader());
        json.addProperty("leaderAddress", status.getLeaderAddress());
        json.addProperty("appliedIndex", status.getAppliedIndex());
        json.addProperty("formatLevel", status.getGroupFormatLevel());
        json.addProperty("highestToken", status.getHighestToken());
        return json;
    }

    private static JsonArray peers(ListPeersResponse list) {
        JsonArray array = new JsonArray();
        for (PeerInfo peer : list.getPeersList()) {
            JsonObject json = new JsonObject();
            json.addProperty("id", peer.getId());
            json.addProperty("clientAddress", peer.getClientAddress());
            json.addProperty("role", peer.getRole().name().replace("PEER_ROLE_", "").toLowerCase(Locale.ROOT));
            json.addProperty("leader", peer.getLeader());
            if (peer.hasMatchIndex()) { // absent while the leader does not know it: the page shows "unknown"
                json.addProperty("matchIndex", peer.getMatchIndex());
            }
            array.add(json);
        }
        return array;
    }

    /** Revokes {@code lock}'s grant {@code token} (0: whichever holds it) as the caller: the service checks admin. */
    private void revoke(HttpCall call, Channel channel, String lock, long token) {
        ListenableFuture<RevokeResponse> revoked = LocksGrpc.newFutureStub(channel)
                .withDeadlineAfter(CALL_MILLIS_MAX, TimeUnit.MILLISECONDS)
                .revoke(RevokeRequest.newBuilder().setLock(lock).setToken(token).build());
        Futures.addCallback(revoked, new FutureCallback<>() {
            @Override
            public void onSuccess(RevokeResponse response) {
                JsonObject json = new JsonObject();
                json.addProperty("revoked", tokenText(response.getRevoked()));
                json.addProperty("next", response.hasNext() ? tokenText(response.getNext()) : null);
                json.addProperty("delayed", response.getDelayed());
                answer(call, 200, json);
            }

            @Override
            public void onFailure(Throwable failure) {
                JsonObject json = failure(failure);
                answer(call, httpStatus(Status.fromThrowable(failure).getCode()), json);
            }
        }, answers);
    }

    private static String tokenText(FencingToken token) {
        return token.getLock() + "#" + token.getValue();
    }

    private static <T> JsonElement outcome(ListenableFuture<T> future, java.util.function.Function<T, JsonElement> f) {
        try {
            return f.apply(Futures.getDone(future));
        } catch (Exception e) {
            return failure(e);
        }
    }

    /** The JSON of a failed call: {@code {"error": {"code": ..., "message": ...}}}, the service's own sentence. */
    static JsonObject failure(Throwable failure) {
        Throwable cause = failure.getCause() instanceof StatusRuntimeException ? failure.getCause() : failure;
        Status status = Status.fromThrowable(cause);
        JsonObject error = new JsonObject();
        error.addProperty("code", status.getCode().name().toLowerCase(Locale.ROOT));
        error.addProperty("message", status.getDescription() == null ? status.getCode().name()
                : status.getDescription());
        JsonObject json = new JsonObject();
        json.add("error", error);
        return json;
    }

    static int httpStatus(Status.Code code) {
        return switch (code) {
            case PERMISSION_DENIED -> 403;
            case UNAUTHENTICATED -> 401;
            case INVALID_ARGUMENT, OUT_OF_RANGE -> 400;
            case FAILED_PRECONDITION -> 409;
            case RESOURCE_EXHAUSTED -> 429;
            case UNAVAILABLE, DEADLINE_EXCEEDED -> 503;
            default -> 500;
        };
    }

    static void answer(HttpCall call, int status, JsonElement json) {
        call.answer(status, JSON, GSON.toJson(json).getBytes(StandardCharsets.UTF_8), Map.of("Cache-Control",
                "no-store", "X-Content-Type-Options", "nosniff"));
    }

    private static void error(HttpCall call, int status, String code, String message) {
        JsonObject error = new JsonObject();
        error.addProperty("code", code);
        error.addProperty("message", message);
        JsonObject json = new JsonObject();
        json.add("error", error);
        answer(call, status, json);
    }

    private static JsonObject body(HttpCall call) {
        try {
            JsonElement json = JsonParser.parseString(new String(call.body(), StandardCharsets.UTF_8));
            return json.isJsonObject() ? json.getAsJsonObject() : null;
        } catch (RuntimeException e) {
            return null;
        }
    }

    private static String text(JsonObject body, String name) {
        JsonElement value = body.get(name);
        return value == null || !value.isJsonPrimitive() ? "" : value.getAsString();
    }

    /**
     * Returns the member {@code name}, a whole number from 0 to 2^63 - 1 (a JSON number or a string of one), or 0
     * when it is absent or null; anything else is refused naming it. Never coerced: a revoke's token 0 means
     * "whichever grant holds the lock", so a token read as 0, or wrapped around (2^64 + 1 as 1), would end a grant
     * the caller did not name.
     */
    private static long number(JsonObject body, String name) {
        JsonElement value = body.get(name);
        if (value == null || value.isJsonNull()) {
            return 0;
        }
        String text = value.isJsonPrimitive() && !value.getAsJsonPrimitive().isBoolean() ? value.getAsString() : null;
        try {
            // At most 30 characters: a BigDecimal's parse grows with the square of its digits.
            long number = text == null || text.length() > 30 ? -1 : new BigDecimal(text).longValueExact();
            if (number >= 0) {
                return number;
            }
        } catch (NumberFormatException | ArithmeticException e) {
            // refused below
        }
        String shown = InvalidArgumentException.printable(value.toString());
        throw new InvalidArgumentException(name, shown, "the console call's '" + name + "' must be a whole number "
                + "from 0 to " + Long.MAX_VALUE + ", not " + shown);
    }

    private static byte[] resource(String name) {
        try (InputStream in = ConsoleRoutes.class.getResourceAsStream(name)) {
            if (in == null) {
                throw new IllegalStateException("the console's " + name + " is missing from the jar");
            }
            return in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
