package io.fencer.cli.exec;

import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * SIGHUP as the operator's request to read the server's ACL file again, as daemons conventionally reload their
 * configuration, without a restart.
 *
 * <p>The signal handler only hands the reload to a thread of its own: a handler runs on the JVM's signal thread,
 * which must not block on file I/O. Signals that arrive while a reload runs coalesce into one more reload (the
 * queue holds one), so a burst of SIGHUPs reads the file at most twice. {@code sun.misc.Signal} is reached
 * reflectively, as in {@link StopSignals}, because javac warns on it unconditionally.
 */
public final class HangupSignals {
    private HangupSignals() {}

    /**
     * Makes SIGHUP run {@code reload} on the thread {@code fencer-acl-reload}; {@code reload} reports its own
     * failures. Returns false where {@code sun.misc.Signal} is missing (SIGHUP then keeps the JVM's default: exit)
     * and where the process was started with SIGHUP ignored, as {@code nohup} does (it then stays ignored).
     */
    public static boolean install(Runnable reload) {
        ThreadPoolExecutor reloads = new ThreadPoolExecutor(1, 1, 0, TimeUnit.MILLISECONDS,
                new ArrayBlockingQueue<>(1), runnable -> {
                    Thread thread = new Thread(runnable, "fencer-acl-reload");
                    thread.setDaemon(true);
                    return thread;
                }, new ThreadPoolExecutor.DiscardPolicy());
        try {
            Class<?> signalClass = Class.forName("sun.misc.Signal");
            Class<?> handlerInterface = Class.forName("sun.misc.SignalHandler");
            InvocationHandler onSignal = (proxy, method, arguments) -> {
                if (method.getName().equals("handle")) {
                    reloads.execute(reload);
                    return null;
                }
                return objectMethod(proxy, method, arguments);
            };
            Object handler = Proxy.newProxyInstance(HangupSignals.class.getClassLoader(),
                    new Class<?>[] {handlerInterface}, onSignal);
            Method handle = signalClass.getMethod("handle", signalClass, handlerInterface);
            Constructor<?> newSignal = signalClass.getConstructor(String.class);
            Object previous = handle.invoke(null, newSignal.newInstance("HUP"), handler);
            // A JVM started with SIGHUP ignored (under nohup) keeps ignoring it and says so only by answering
            // SIG_IGN as the previous handler: no reload would ever run.
            if (previous == handlerInterface.getField("SIG_IGN").get(null)) {
                reloads.shutdown();
                return false;
            }
            return true;
        } catch (ReflectiveOperationException | LinkageError | IllegalArgumentException e) {
            reloads.shutdown();
            return false;
        }
    }

    private static Object objectMethod(Object proxy, Method method, Object[] arguments) {
        return switch (method.getName()) {
            case "equals" -> proxy == arguments[0];
            case "hashCode" -> System.identityHashCode(proxy);
            case "toString" -> "fencer ACL-reload signal handler";
            default -> throw new UnsupportedOperationException(method.getName());
        };
    }
}
