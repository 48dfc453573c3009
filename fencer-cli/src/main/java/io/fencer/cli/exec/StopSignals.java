package io.fencer.cli.exec;

import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The user's request to stop (SIGINT, SIGTERM, SIGHUP), as a stage a command can wait on next to its other events.
 *
 * <p>Why not a shutdown hook: a hook runs while the JVM is already exiting with status 128 + signal, but a lock
 * holder stopped on purpose must release its lock and exit 0. So the JVM's handlers for INT and TERM are replaced
 * (through {@code sun.misc.Signal}, reached reflectively because javac warns on it unconditionally). A second signal
 * while the command is still cleaning up halts at once, so a hung release never traps the user; what was
 * registered with {@link #beforeHalt} runs first, so that {@code lock exec} kills its command's process group rather
 * than leave it running, in a session of its own, without the lock.
 *
 * <p>SIGHUP is a stop request too: a closed terminal or a dropped ssh session sends it to fencer alone (the command
 * of {@code lock exec} runs in a session of its own), and the JVM's default exit would leave the command running
 * without the lock. A process started with SIGHUP ignored (under {@code nohup}) keeps ignoring it.
 */
public final class StopSignals {
    private static final List<String> SIGNAL_NAMES = List.of("INT", "TERM", "HUP");
    /** What runs before a second signal halts the JVM. */
    private static final List<Runnable> BEFORE_HALT = new CopyOnWriteArrayList<>();

    /** A registration of {@link #beforeHalt}, undone by {@link #close()}. */
    public interface Registration extends AutoCloseable {
        @Override
        void close();
    }

    private StopSignals() {}

    /** Returns the exit status of a process stopped by {@code signalName}: 128 + its number (130 for INT). */
    public static int exitCode(String signalName) {
        return switch (signalName) {
            case "INT" -> 130;
            case "TERM" -> 143;
            case "HUP" -> 129;
            default -> 1;
        };
    }

    /**
     * Runs {@code action} (quick, on the JVM's signal thread) before a second stop signal halts the JVM, until the
     * registration is closed.
     */
    public static Registration beforeHalt(Runnable action) {
        BEFORE_HALT.add(action);
        return () -> BEFORE_HALT.remove(action);
    }

    /**
     * Installs handlers for SIGINT, SIGTERM and SIGHUP (unless ignored) and returns a stage completed with the first
     * signal's name.
     *
     * <p>Where {@code sun.misc.Signal} is missing this falls back to a shutdown hook that only notifies: the JVM
     * then exits without waiting for a release, and the service frees the lock when the session's lease runs out.
     */
    public static CompletionStage<String> install() {
        CompletableFuture<String> stopped = new CompletableFuture<>();
        try {
            Class<?> signalClass = Class.forName("sun.misc.Signal");
            Class<?> handlerInterface = Class.forName("sun.misc.SignalHandler");
            Method getName = signalClass.getMethod("getName");
            InvocationHandler onSignal = (proxy, method, arguments) -> {
                if (!method.getName().equals("handle")) {
                    return objectMethod(proxy, method, arguments);
                }
                String name = (String) getName.invoke(arguments[0]);
                if (!stopped.complete(name)) {
                    BEFORE_HALT.forEach(StopSignals::runQuietly);
                    Runtime.getRuntime().halt(exitCode(name));
                }
                return null;
            };
            Object handler = Proxy.newProxyInstance(StopSignals.class.getClassLoader(),
                    new Class<?>[] {handlerInterface}, onSignal);
            Method handle = signalClass.getMethod("handle", signalClass, handlerInterface);
            Constructor<?> newSignal = signalClass.getConstructor(String.class);
            Object ignored = handlerInterface.getField("SIG_IGN").get(null);
            for (String name : SIGNAL_NAMES) {
                Object signal = newSignal.newInstance(name);
                Object previous = handle.invoke(null, signal, handler);
                if ("HUP".equals(name) && previous == ignored) { // under nohup: the user asked not to be stopped
                    handle.invoke(null, signal, ignored);
                }
            }
        } catch (ReflectiveOperationException | LinkageError | IllegalArgumentException e) {
            Runtime.getRuntime().addShutdownHook(new Thread(() -> stopped.complete("TERM"), "fencer-stop"));
        }
        return stopped;
    }

    private static void runQuietly(Runnable action) {
        try {
            action.run();
        } catch (RuntimeException e) {
            // the halt follows anyway: the user asked twice
        }
    }

    private static Object objectMethod(Object proxy, Method method, Object[] arguments) {
        return switch (method.getName()) {
            case "equals" -> proxy == arguments[0];
            case "hashCode" -> System.identityHashCode(proxy);
            case "toString" -> "fencer stop-signal handler";
            default -> throw new UnsupportedOperationException(method.getName());
        };
    }
}
