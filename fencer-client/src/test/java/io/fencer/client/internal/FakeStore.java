package io.fencer.client.internal;

import io.fencer.api.errors.WireErrors;
import io.fencer.api.v1.AbortUnitRequest;
import io.fencer.api.v1.AbortUnitResponse;
import io.fencer.api.v1.BeginUnitRequest;
import io.fencer.api.v1.BeginUnitResponse;
import io.fencer.api.v1.CommitUnitRequest;
import io.fencer.api.v1.CreateScopeRequest;
import io.fencer.api.v1.FenceRequest;
import io.fencer.api.v1.GetRequest;
import io.fencer.api.v1.GetResponse;
import io.fencer.api.v1.ListPeersRequest;
import io.fencer.api.v1.ListPeersResponse;
import io.fencer.api.v1.Op;
import io.fencer.api.v1.PeerInfo;
import io.fencer.api.v1.PeersGrpc;
import io.fencer.api.v1.Policy;
import io.fencer.api.v1.ScopeInfo;
import io.fencer.api.v1.StoreGrpc;
import io.fencer.api.v1.UnitWriteRequest;
import io.fencer.api.v1.UnitWriteResponse;
import io.fencer.api.v1.WriteRequest;
import io.fencer.api.v1.WriteResponse;
import io.fencer.core.FencePolicy;
import io.fencer.core.FencerException;
import io.fencer.core.InvalidArgumentException;
import io.fencer.store.ReadResult;
import io.fencer.store.StoreEngine;
import io.fencer.store.StoreOptions;
import io.fencer.store.Unit;
import io.fencer.store.WriteResult;
import io.grpc.Server;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyServerBuilder;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/**
 * A store peer for the client's tests: the real {@link StoreEngine} (RocksDB in a temporary directory) served over
 * real gRPC on 127.0.0.1, with its errors on the wire as {@code errors.proto} pairs them. Calls can be scripted to
 * fail before they run, or to run and then lose their answer (the store applied the write, the client never
 * learns it). It lists its group's peers ({@code fencer.v1.Peers/List}) once told them ({@link #listPeers}), as a
 * peer of a group serving the replicated store does; until then it answers List UNIMPLEMENTED, as a store server of
 * its own does.
 */
final class FakeStore extends StoreGrpc.StoreImplBase implements AutoCloseable {
    final StoreEngine engine;
    final List<String> calls = new CopyOnWriteArrayList<>();
    private final Server server;
    private final Map<String, Queue<StatusRuntimeException>> failBefore = new ConcurrentHashMap<>();
    private final Map<String, Queue<LostAnswer>> failAfter = new ConcurrentHashMap<>();
    private final java.util.concurrent.atomic.AtomicBoolean closed = new java.util.concurrent.atomic.AtomicBoolean();
    /** The client addresses List answers with; null: List is not served. */
    private volatile List<String> peers;
    /** The List calls received, served or not (kept apart from {@link #calls}, which are the store's). */
    final java.util.concurrent.atomic.AtomicInteger listCalls = new java.util.concurrent.atomic.AtomicInteger();

    private FakeStore(Path directory) {
        this.engine = StoreEngine.open(directory, StoreOptions.defaults());
        try {
            this.server = NettyServerBuilder.forAddress(new InetSocketAddress("127.0.0.1", 0)).addService(this)
                    .addService(new Peers()).build().start();
        } catch (IOException e) {
            engine.close();
            throw new UncheckedIOException(e);
        }
    }

    static FakeStore start(Path directory) {
        return new FakeStore(directory);
    }

    String endpoint() {
        return "127.0.0.1:" + server.getPort();
    }

    /** From now on answers {@code fencer.v1.Peers/List} with peers at these client addresses. */
    void listPeers(List<String> clientAddresses) {
        peers = List.copyOf(clientAddresses);
    }

    /** The group's membership service, as far as List goes. */
    private final class Peers extends PeersGrpc.PeersImplBase {
        @Override
        public void list(ListPeersRequest request, StreamObserver<ListPeersResponse> responses) {
            listCalls.incrementAndGet();
            List<String> listed = peers;
            if (listed == null) {
                responses.onError(Status.UNIMPLEMENTED.withDescription("Method not found: fencer.v1.Peers/List")
                        .asRuntimeException());
                return;
            }
            ListPeersResponse.Builder response = ListPeersResponse.newBuilder();
            for (int i = 0; i < listed.size(); i++) {
                response.addPeers(PeerInfo.newBuilder().setId("n" + (i + 1)).setClientAddress(listed.get(i)));
            }
            responses.onNext(response.build());
            responses.onCompleted();
        }
    }

    long count(String method) {
        return calls.stream().filter(method::equals).count();
    }

    /** Fails the next call of {@code method} with {@code failure} without running it. */
    void failNext(String method, StatusRuntimeException failure) {
        failBefore.computeIfAbsent(method, m -> new ConcurrentLinkedQueue<>()).add(failure);
    }

    /** Runs the next call of {@code method}, then answers it with {@code failure}: the answer is lost. */
    void loseNextAnswer(String method, StatusRuntimeException failure) {
        loseNextAnswer(method, failure, () -> { });
    }

    /**
     * Runs the next call of {@code method}, then {@code meanwhile} (e.g. another client's write), then answers the
     * call with {@code failure}.
     */
    void loseNextAnswer(String method, StatusRuntimeException failure, Runnable meanwhile) {
        failAfter.computeIfAbsent(method, m -> new ConcurrentLinkedQueue<>()).add(new LostAnswer(failure, meanwhile));
    }

    private record LostAnswer(StatusRuntimeException failure, Runnable meanwhile) {}

    static StatusRuntimeException unavailable() {
        return Status.UNAVAILABLE.withDescription("connection reset (scripted)").asRuntimeException();
    }

    @FunctionalInterface
    private interface Handler<Q, R> {
        R handle(Q request);
    }

    private <Q, R> void answer(String method, Q request, StreamObserver<R> responses, Handler<Q, R> handler) {
        calls.add(method);
        StatusRuntimeException before = poll(failBefore, method);
        if (before != null) {
            responses.onError(before);
            return;
        }
        R response;
        try {
            response = handler.handle(request);
        } catch (FencerException e) {
            responses.onError(toStatus(e));
            return;
        }
        Queue<LostAnswer> lost = failAfter.get(method);
        LostAnswer after = lost == null ? null : lost.poll();
        if (after != null) {
            after.meanwhile().run();
            responses.onError(after.failure());
            return;
        }
        responses.onNext(response);
        responses.onCompleted();
    }

    private static StatusRuntimeException poll(Map<String, Queue<StatusRuntimeException>> scripts, String method) {
        Queue<StatusRuntimeException> queue = scripts.get(method);
        return queue == null ? null : queue.poll();
    }

    /** Maps an engine error as the server does: by the wire catalogue. */
    static StatusRuntimeException toStatus(FencerException error) {
        return WireErrors.toStatusException(error);
    }

    private static List<io.fencer.store.Op> ops(List<Op> protos) {
        List<io.fencer.store.Op> ops = new ArrayList<>();
        for (Op op : protos) {
            ops.add(op.hasPut() ? io.fencer.store.Op.put(op.getPut().getKey().toByteArray(),
                    op.getPut().getValue().toByteArray()) : io.fencer.store.Op.delete(op.getDelete().getKey()
                    .toByteArray()));
        }
        return ops;
    }

    private static WriteResponse response(WriteResult result) {
        return WriteResponse.newBuilder().setScope(result.scope()).setToken(result.token())
                .setAccepted(result.accepted()).setRevision(result.revision()).setOpsApplied(result.opsApplied())
                .setReplayed(result.replayed()).build();
    }

    private static ScopeInfo scopeInfo(io.fencer.store.ScopeInfo info) {
        return ScopeInfo.newBuilder().setScope(info.scope()).setLock(info.lock())
                .setPolicy(info.policy() == FencePolicy.STRICT ? Policy.POLICY_STRICT : Policy.POLICY_AT_LEAST)
                .setAccepted(info.accepted()).setRevision(info.revision()).setExists(info.exists()).build();
    }

    /** Units by id, kept after they end so that a late call learns why (preempted: stale), as the spec says. */
    private final Map<String, Unit> units = new ConcurrentHashMap<>();

    private Unit unit(String id) {
        Unit unit = units.get(id);
        if (unit == null) {
            throw new InvalidArgumentException("unit_id", id, "no unit " + id);
        }
        return unit;
    }

    @Override
    public void write(WriteRequest request, StreamObserver<WriteResponse> responses) {
        answer("Write", request, responses, r -> response(engine.write(r.getScope(), r.getSequencer(),
                ops(r.getOpsList()), r.getIdempotencyKey().isEmpty() ? null : r.getIdempotencyKey())));
    }

    @Override
    public void get(GetRequest request, StreamObserver<GetResponse> responses) {
        answer("Get", request, responses, r -> {
            ReadResult read = engine.get(r.getScope(), r.getKey().toByteArray(),
                    r.getSequencer().isEmpty() ? null : r.getSequencer());
            GetResponse.Builder response = GetResponse.newBuilder().setFound(read.present())
                    .setWrittenBy(read.writtenBy()).setAccepted(read.accepted());
            if (read.present()) {
                response.setValue(com.google.protobuf.ByteString.copyFrom(read.value()));
            }
            return response.build();
        });
    }

    @Override
    public void fence(FenceRequest request, StreamObserver<ScopeInfo> responses) {
        answer("Fence", request, responses, r -> scopeInfo(engine.scope(r.getScope())));
    }

    @Override
    public void createScope(CreateScopeRequest request, StreamObserver<ScopeInfo> responses) {
        answer("CreateScope", request, responses, r -> scopeInfo(engine.createScope(r.getScope(),
                r.getLock().isEmpty() ? r.getScope() : r.getLock(),
                r.getPolicy() == Policy.POLICY_STRICT ? FencePolicy.STRICT : FencePolicy.AT_LEAST)));
    }

    @Override
    public void beginUnit(BeginUnitRequest request, StreamObserver<BeginUnitResponse> responses) {
        answer("BeginUnit", request, responses, r -> {
            Unit unit = engine.begin(r.getScope(), r.getSequencer(), Duration.ofMillis(r.getTimeoutMillis()));
            units.put(unit.id(), unit);
            return BeginUnitResponse.newBuilder().setUnitId(unit.id()).setAccepted(unit.token().value()).build();
        });
    }

    @Override
    public void unitWrite(UnitWriteRequest request, StreamObserver<UnitWriteResponse> responses) {
        answer("UnitWrite", request, responses, r -> {
            Unit unit = unit(r.getUnitId());
            ops(r.getOpsList()).forEach(unit::add);
            return UnitWriteResponse.newBuilder().setOpsBuffered(r.getOpsCount()).build();
        });
    }

    @Override
    public void commitUnit(CommitUnitRequest request, StreamObserver<WriteResponse> responses) {
        answer("CommitUnit", request, responses, r -> response(unit(r.getUnitId()).commit()));
    }

    @Override
    public void abortUnit(AbortUnitRequest request, StreamObserver<AbortUnitResponse> responses) {
        answer("AbortUnit", request, responses, r -> {
            Unit unit = units.get(r.getUnitId());
            if (unit != null) {
                unit.abort();
            }
            return AbortUnitResponse.newBuilder().setAborted(true).build();
        });
    }

    /** Stops serving and closes the engine; idempotent (a test may stop a peer before its cleanup does). */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        server.shutdownNow();
        try {
            server.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        engine.close();
    }
}
