package io.fencer.load;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/** The load threads of one bench: started together, released at once, waited for within a bound. */
final class Workers {
    private Workers() {}

    /**
     * Starts one daemon thread per task, named {@code name-<i>}; then opens the measured window ({@code openWindow}
     * returns the {@link System#nanoTime()} by which every task must have finished), releases the tasks through
     * {@code go}, and waits for them until then. Tasks still running are interrupted, also when this fails.
     */
    static void run(String name, List<Runnable> tasks, CountDownLatch go, LongSupplier openWindow)
            throws InterruptedException {
        List<Thread> threads = new ArrayList<>(tasks.size());
        try {
            for (int i = 0; i < tasks.size(); i++) {
                Thread thread = new Thread(tasks.get(i), name + "-" + i);
                thread.setDaemon(true);
                thread.start();
                threads.add(thread);
            }
            long finishByNanos = openWindow.getAsLong();
            go.countDown(); // publishes the window the tasks read after go.await()
            for (Thread thread : threads) {
                TimeUnit.NANOSECONDS.timedJoin(thread, Math.max(1, finishByNanos - System.nanoTime()));
            }
        } finally {
            go.countDown();
            threads.stream().filter(Thread::isAlive).forEach(Thread::interrupt);
        }
    }
}
