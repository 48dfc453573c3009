package io.fencer.chaos.workload;

import java.nio.file.Path;
import java.time.DateTimeException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * The command line of a worker or demo client process: the one place that writes a {@link WorkerOptions} as
 * arguments ({@link #toArguments}) and reads them back ({@link #parse}), so the harness that starts the process
 * and the process itself cannot disagree about it.
 *
 * <p>Every argument is one token, {@code --name=value} (or the bare flags {@code --no-fencing} and
 * {@code --replicated-store}): a value is never a token of its own, so no value, however odd ({@code --},
 * {@code @file}, an option's name), can be taken for something else by the command-line parser in front of
 * {@link #parse}. Durations are written in ISO-8601
 * ({@link Duration#toString()}), which reads back exactly.
 */
public final class WorkerArguments {
    /** The most arguments {@link #parse} reads: a worker has ten options and at most a few lock servers. */
    static final int ARGUMENTS_MAX = 64;

    private static final List<String> WORKER_COMMAND = List.of("chaos", "worker");
    private static final List<String> CLIENT_COMMAND = List.of("chaos", "client");
    private static final String ID = "--id";
    private static final String LOCK_SERVER = "--lock-server";
    private static final String STORE = "--store";
    private static final String LOCK = "--lock";
    private static final String WORKLOAD = "--workload";
    private static final String THINK_MAX = "--think-max";
    private static final String TTL = "--ttl";
    private static final String HISTORY = "--history";
    private static final String ORIGIN_NANOS = "--origin-nanos";
    private static final String SEED = "--seed";
    private static final String NO_FENCING = "--no-fencing";
    /** Written when the store is a group's replicated store ({@link WorkerOptions#replicatedStore()}). */
    private static final String REPLICATED_STORE = "--replicated-store";
    /** Written for the semaphore workload only; absent means 1. */
    private static final String PERMITS = "--permits";
    private static final List<String> VALUED = List.of(ID, LOCK_SERVER, STORE, LOCK, WORKLOAD, THINK_MAX, TTL,
            HISTORY, ORIGIN_NANOS, SEED, PERMITS);

    private WorkerArguments() {}

    /** Returns the subcommand and arguments of a chaos worker process, {@code chaos worker ...}. */
    public static List<String> workerCommand(WorkerOptions options) {
        return command(WORKER_COMMAND, options);
    }

    /** Returns the subcommand and arguments of a scripted demo client process, {@code chaos client ...}. */
    public static List<String> clientCommand(WorkerOptions options) {
        return command(CLIENT_COMMAND, options);
    }

    /** Returns {@code options} as arguments that {@link #parse} reads back to an equal {@link WorkerOptions}. */
    public static List<String> toArguments(WorkerOptions options) {
        Objects.requireNonNull(options, "options");
        List<String> arguments = new ArrayList<>();
        arguments.add(ID + "=" + options.id());
        for (String endpoint : options.lockEndpoints()) {
            arguments.add(LOCK_SERVER + "=" + endpoint);
        }
        arguments.add(STORE + "=" + options.storeEndpoint());
        arguments.add(LOCK + "=" + options.lock());
        arguments.add(WORKLOAD + "=" + options.workload().name().toLowerCase(Locale.ROOT));
        arguments.add(THINK_MAX + "=" + options.thinkMax());
        arguments.add(TTL + "=" + options.ttl());
        arguments.add(HISTORY + "=" + options.historyFile());
        arguments.add(ORIGIN_NANOS + "=" + options.originNanos());
        arguments.add(SEED + "=" + options.seed());
        if (!options.fencing()) {
            arguments.add(NO_FENCING);
        }
        if (options.replicatedStore()) {
            arguments.add(REPLICATED_STORE);
        }
        if (options.permits() != 1) {
            arguments.add(PERMITS + "=" + options.permits());
        }
        return List.copyOf(arguments);
    }

    /**
     * Reads arguments written by {@link #toArguments}.
     *
     * @throws IllegalArgumentException naming the argument when one is unknown, repeated, missing or malformed
     */
    public static WorkerOptions parse(List<String> arguments) {
        if (arguments.size() > ARGUMENTS_MAX) {
            throw new IllegalArgumentException(arguments.size() + " worker arguments, more than the "
                    + ARGUMENTS_MAX + " allowed");
        }
        Map<String, List<String>> values = new LinkedHashMap<>();
        boolean fencing = true;
        boolean replicatedStore = false;
        for (String argument : arguments) {
            if (argument.equals(REPLICATED_STORE)) {
                if (replicatedStore) {
                    throw new IllegalArgumentException("worker argument " + REPLICATED_STORE + " given twice");
                }
                replicatedStore = true;
                continue;
            }
            if (argument.equals(NO_FENCING)) {
                if (!fencing) {
                    throw new IllegalArgumentException("worker argument " + NO_FENCING + " given twice");
                }
                fencing = false;
                continue;
            }
            int equals = argument.indexOf('=');
            String name = equals < 0 ? argument : argument.substring(0, equals);
            if (equals < 0 || !VALUED.contains(name)) {
                throw new IllegalArgumentException("unknown worker argument '" + argument + "'");
            }
            values.computeIfAbsent(name, key -> new ArrayList<>()).add(argument.substring(equals + 1));
        }
        return new WorkerOptions(single(values, ID), many(values, LOCK_SERVER), single(values, STORE),
                single(values, LOCK), workload(single(values, WORKLOAD)), duration(values, THINK_MAX),
                duration(values, TTL), fencing, Path.of(single(values, HISTORY)), number(values, ORIGIN_NANOS),
                number(values, SEED), values.containsKey(PERMITS) ? permits(values) : 1, replicatedStore);
    }

    private static int permits(Map<String, List<String>> values) {
        long permits = number(values, PERMITS);
        if (permits < 1 || permits > WorkerOptions.PERMITS_MAX) {
            throw new IllegalArgumentException("worker argument " + PERMITS + " is " + permits + ", outside [1, "
                    + WorkerOptions.PERMITS_MAX + "]");
        }
        return (int) permits;
    }

    private static List<String> command(List<String> subcommand, WorkerOptions options) {
        List<String> command = new ArrayList<>(subcommand);
        command.addAll(toArguments(options));
        return List.copyOf(command);
    }

    private static List<String> many(Map<String, List<String>> values, String name) {
        List<String> given = values.get(name);
        if (given == null) {
            throw new IllegalArgumentException("worker argument " + name + " is missing");
        }
        return given;
    }

    private static String single(Map<String, List<String>> values, String name) {
        List<String> given = many(values, name);
        if (given.size() > 1) {
            throw new IllegalArgumentException("worker argument " + name + " given " + given.size() + " times");
        }
        return given.get(0);
    }

    private static Workload workload(String text) {
        for (Workload workload : Workload.values()) {
            if (workload.name().toLowerCase(Locale.ROOT).equals(text)) {
                return workload;
            }
        }
        throw new IllegalArgumentException("worker argument " + WORKLOAD + " is '" + text + "', not a workload");
    }

    private static Duration duration(Map<String, List<String>> values, String name) {
        String text = single(values, name);
        try {
            return Duration.parse(text);
        } catch (DateTimeException e) {
            throw new IllegalArgumentException("worker argument " + name + " is '" + text
                    + "', not an ISO-8601 duration", e);
        }
    }

    private static long number(Map<String, List<String>> values, String name) {
        String text = single(values, name);
        try {
            return Long.parseLong(text);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("worker argument " + name + " is '" + text + "', not a number", e);
        }
    }
}
