package io.fencer.cli.exec;

import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * The user's request to stop (SIGINT, SIGTERM), as a stage a command can wait on next to its other events.
 *
 * <p>Why not a shutdown hook: a hook runs while the JVM is already exiting with status 128 + signal, but a lock
 * holder stopped on purpose must release its lock and exit 0. So the JVM's handlers for INT and TERM are replaced
 * (through {@code sun.misc.Signal}, reached reflectively because javac warns on it unconditionally). A second signal
 * while the command is still cleaning up halts at once, so a hung release never traps the user.
 */
public final class StopSignals {
    private static final List<String> SIGNAL_NAMES = List.of("INT", "TERM");

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
     * Installs handlers for SIGINT and SIGTERM and returns a stage completed with the first signal's name.
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
                    Runtime.getRuntime().halt(exitCode(name));
                }
                return null;
            };
            Object handler = Proxy.newProxyInstance(StopSignals.class.getClassLoader(),
                    new Class<?>[] {handlerInterface}, onSignal);
            Method handle = signalClass.getMethod("handle", signalClass, handlerInterface);
            Constructor<?> newSignal = signalClass.getConstructor(String.class);
            for (String name : SIGNAL_NAMES) {
                handle.invoke(null, newSignal.newInstance(name), handler);
            }
        } catch (ReflectiveOperationException | LinkageError | IllegalArgumentException e) {
            Runtime.getRuntime().addShutdownHook(new Thread(() -> stopped.complete("TERM"), "fencer-stop"));
        }
        return stopped;
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
