package io.fencer.server;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.Test;

class ThreadDumpsTest {
    @Test
    void all_whileOneThreadWaitsForAMonitorAnotherHolds_namesBothTheLockAndItsOwner() throws Exception {
        Object lock = new Object();
        CountDownLatch held = new CountDownLatch(1);
        CountDownLatch letGo = new CountDownLatch(1);
        Thread holder = new Thread(() -> {
            synchronized (lock) {
                held.countDown();
                try {
                    letGo.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }, "dump-holder");
        Thread waiter = new Thread(() -> {
            synchronized (lock) {
                lock.hashCode();
            }
        }, "dump-waiter");
        holder.start();
        held.await();
        waiter.start();
        await().atMost(Duration.ofSeconds(30)).until(() -> waiter.getState() == Thread.State.BLOCKED);
        try {
            String dump = ThreadDumps.all();

            assertThat(dump).contains("\"dump-waiter\" BLOCKED on java.lang.Object@")
                    .contains("owned by \"dump-holder\"")
                    .contains(ThreadDumpsTest.class.getName() + ".lambda$")
                    .contains("\t- locked java.lang.Object@");
        } finally {
            letGo.countDown();
            holder.join();
            waiter.join();
        }
    }
}
