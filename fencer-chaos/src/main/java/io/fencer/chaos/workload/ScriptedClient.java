package io.fencer.chaos.workload;

import io.fencer.chaos.history.HistoryEvent;
import io.fencer.chaos.history.HistoryEvent.Op;
import io.fencer.chaos.history.HistoryEvent.Type;
import io.fencer.chaos.history.HistoryLog;
import io.fencer.client.FencedStore;
import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.Session;
import io.fencer.client.StaleWriteException;
import io.fencer.client.StoreValue;
import io.fencer.client.WriteReceipt;
import io.fencer.core.FencingToken;
import io.fencer.core.SessionExpiredException;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/**
 * A client process driven line by line on standard input, for the demo: the harness tells it when to acquire and
 * write, and freezes it in between. It answers each command with one line on standard output and records its
 * operations in its history.
 *
 * <pre>
 *   acquire            -> granted TOKEN SEQUENCER
 *   write VALUE        -> written REVISION | refused ACCEPTED DIAGNOSIS
 *   read               -> value VALUE WRITTEN_BY
 *   quit               (ends the process)
 * </pre>
 *
 * Any failure answers {@code error MESSAGE}. A write goes out with the grant's token however long ago the grant
 * was made — the client does not check its lease first, like a paused client that wakes up and writes.
 */
public final class ScriptedClient {
    /** The key the demo writes. */
    static final String KEY = "balance";
    private static final Duration ACQUIRE_WAIT = Duration.ofSeconds(60);

    private final WorkerOptions options;
    private final HistoryLog history;
    private final PrintStream out;
    private Session session;
    private Grant grant;

    private ScriptedClient(WorkerOptions options, HistoryLog history, PrintStream out) {
        this.options = options;
        this.history = history;
        this.out = out;
    }

    /** Runs the client until {@code quit} or the end of standard input; returns the exit code. */
    public static int run(WorkerOptions options) throws IOException {
        try (HistoryLog history = HistoryLog.open(options.historyFile(), options.id(), options.originNanos());
             FencerClient fencer = Fencer.newBuilder().endpoints(options.lockEndpoints().toArray(String[]::new))
                .build();
             FencedStore store = Fencer.newStoreBuilder().endpoint(options.storeEndpoint()).lockService(fencer)
                .build();
             BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
            ScriptedClient client = new ScriptedClient(options, history, System.out);
            client.session = fencer.openSession(options.ttl());
            client.answer("ready " + client.session.id());
            String line;
            while ((line = in.readLine()) != null && !line.strip().equals("quit")) {
                client.execute(line.strip(), fencer, store);
            }
            client.session.close();
        }
        return 0;
    }

    private void execute(String command, FencerClient fencer, FencedStore store) {
        try {
            if (command.equals("acquire")) {
                acquire(fencer);
            } else if (command.startsWith("write ")) {
                write(store, command.substring("write ".length()));
            } else if (command.equals("read")) {
                StoreValue value = store.get(options.lock(), KEY);
                answer("value " + (value.present() ? value.valueUtf8() : "") + " " + value.writtenBy());
            } else {
                answer("error unknown command: " + command);
            }
        } catch (RuntimeException e) {
            answer("error " + Worker.describe(e));
        }
    }

    /**
     * Acquires the lock, waiting in line. A session lost while this client was idle (a loaded machine can starve
     * its keepalives) is replaced first, and a session lost while waiting is replaced and the wait resumed: the
     * demo needs B's grant, and B was not the one frozen.
     */
    private void acquire(FencerClient fencer) {
        long deadline = System.nanoTime() + ACQUIRE_WAIT.toNanos();
        history.record(Type.INVOKE, Op.ACQUIRE, 0, "");
        while (true) {
            if (!session.isAlive()) {
                history.info(Op.SESSION_LOST, options.id());
                session.close();
                session = fencer.openSession(options.ttl());
            }
            try {
                Duration wait = Duration.ofNanos(Math.max(1, deadline - System.nanoTime()));
                grant = session.lock(options.lock()).acquire(wait);
                break;
            } catch (SessionExpiredException e) {
                if (System.nanoTime() - deadline > 0) {
                    history.failure(Type.FAIL, Op.ACQUIRE, 0, "", Worker.describe(e), Worker.reasonOf(e));
                    throw e;
                }
            } catch (RuntimeException e) {
                history.failure(Type.FAIL, Op.ACQUIRE, 0, "", Worker.describe(e), Worker.reasonOf(e));
                throw e;
            }
        }
        history.record(Type.OK, Op.ACQUIRE, grant.token().value(), "");
        answer("granted " + grant.token().value() + " " + grant.sequencer());
    }

    private void write(FencedStore store, String value) {
        if (grant == null) {
            answer("error no grant: acquire first");
            return;
        }
        long token = grant.token().value();
        String sequencer = options.fencing() ? grant.sequencer() : new FencingToken(options.lock(), 1).sequencer();
        history.record(Type.INVOKE, Op.WRITE, token, value);
        try {
            WriteReceipt receipt = store.put(options.lock(), KEY, value, sequencer);
            history.append(HistoryEvent.of(history.nowMicros(), options.id(), Type.OK, Op.WRITE).withToken(token)
                    .withValue(value).withRevision(receipt.revision()));
            answer("written " + receipt.revision());
        } catch (StaleWriteException e) {
            history.failure(Type.FAIL, Op.WRITE, token, value, Worker.describe(e), Worker.reasonOf(e));
            answer("refused " + e.accepted() + " " + e.diagnose());
        } catch (RuntimeException e) {
            history.failure(Worker.outcomeOfWrite(e), Op.WRITE, token, value, Worker.describe(e), Worker.reasonOf(e));
            throw e;
        }
    }

    private void answer(String line) {
        out.println(line.replace('\n', ' '));
        out.flush();
    }
}
