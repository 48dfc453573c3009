package io.fencer.store;

import io.fencer.core.FencingToken;
import io.fencer.core.StaleTokenException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The child process of {@link StoreEngineCrashTest}: writes to a few scopes from many threads, with tokens
 * drawn from one counter per scope, and prints one line per outcome, only after the write returned:
 * {@code ACK scope token end} or {@code REFUSED scope token end}. It runs until it is killed.
 *
 * <p>Arguments: the store directory, the number of threads, the number of scopes, and optionally the size of
 * each written value in bytes (by default the key itself).
 */
public final class CrashWriterMain {
    private CrashWriterMain() {}

    public static void main(String[] args) throws Exception {
        Path directory = Path.of(args[0]);
        int threads = Integer.parseInt(args[1]);
        int scopes = Integer.parseInt(args[2]);
        int valueBytes = args.length > 3 ? Integer.parseInt(args[3]) : 0;
        StoreEngine store = StoreEngine.open(directory, StoreOptions.defaults());
        AtomicLong[] counters = new AtomicLong[scopes];
        for (int i = 0; i < scopes; i++) {
            counters[i] = new AtomicLong(store.accepted(scopeName(i)));
        }
        System.out.println("READY");
        List<Thread> writers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int thread = t;
            writers.add(new Thread(() -> writeForever(store, counters, thread, valueBytes), "writer-" + t));
        }
        writers.forEach(Thread::start);
        for (Thread writer : writers) {
            writer.join();
        }
    }

    static String scopeName(int index) {
        return "crash-" + index;
    }

    private static void writeForever(StoreEngine store, AtomicLong[] counters, int thread, int valueBytes) {
        for (long i = 0; ; i++) {
            int scopeIndex = (int) ((thread + i) % counters.length);
            String scope = scopeName(scopeIndex);
            long token = counters[scopeIndex].incrementAndGet();
            byte[] key = ("t" + token).getBytes(StandardCharsets.UTF_8);
            byte[] value = valueBytes == 0 ? key : Arrays.copyOf(key, valueBytes);
            try {
                store.write(scope, new FencingToken(scope, token).sequencer(), List.of(Op.put(key, value)), null);
                System.out.println("ACK " + scope + " " + token + " end");
            } catch (StaleTokenException e) {
                System.out.println("REFUSED " + scope + " " + token + " end");
            }
        }
    }
}
