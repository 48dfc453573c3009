package io.fencer.server;

import java.lang.management.LockInfo;
import java.lang.management.ManagementFactory;
import java.lang.management.MonitorInfo;
import java.lang.management.ThreadInfo;

/**
 * Every thread of this JVM with its whole stack and the locks it holds and waits for, for a test whose wait for an
 * in-process peer timed out: the peers run in the test's JVM, so their threads are the evidence, and the dump is taken
 * in the JVM itself ({@link ThreadInfo#toString} would cut each stack at eight frames).
 */
final class ThreadDumps {
    private ThreadDumps() {
    }

    static String all() {
        StringBuilder dump = new StringBuilder("threads of this JVM:\n");
        for (ThreadInfo thread : ManagementFactory.getThreadMXBean().dumpAllThreads(true, true)) {
            dump.append('"').append(thread.getThreadName()).append("\" ").append(thread.getThreadState());
            if (thread.getLockInfo() != null) {
                dump.append(" on ").append(thread.getLockInfo());
            }
            if (thread.getLockOwnerName() != null) {
                dump.append(" owned by \"").append(thread.getLockOwnerName()).append('"');
            }
            dump.append('\n');
            StackTraceElement[] stack = thread.getStackTrace();
            for (int depth = 0; depth < stack.length; depth++) {
                dump.append("\tat ").append(stack[depth]).append('\n');
                for (MonitorInfo monitor : thread.getLockedMonitors()) {
                    if (monitor.getLockedStackDepth() == depth) {
                        dump.append("\t- locked ").append(monitor).append('\n');
                    }
                }
            }
            for (LockInfo lock : thread.getLockedSynchronizers()) {
                dump.append("\t- holds ").append(lock).append('\n');
            }
        }
        return dump.toString();
    }
}
