package io.fencer.cli.exec;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * The processes that {@code fencer lock exec} stops together: the command's own process group (Linux only). The
 * command is started through {@code setsid(1)} (util-linux), so it leads a new session and process group whose id is
 * its pid, and every descendant it starts is in that group unless it leaves it. Signals go to the whole group at
 * once ({@code kill -TERM -- -PGID}), so a child that ignores SIGTERM, or a grandchild whose parent died, is reached
 * too; whether any member still lives is read from {@code /proc}.
 *
 * <p>What a process group cannot hold: a descendant that calls {@code setsid(2)} or {@code setpgid(2)} itself (a
 * daemon that double-forks, {@code setsid CMD} inside the command) leaves the group, and nothing short of a cgroup
 * can track it. The command also runs without a controlling terminal.
 *
 * <p>{@link #directChildOnly} is the behaviour before process groups, kept for the test that shows what the group
 * buys: signals reach the direct child alone.
 */
final class ProcessGroup {
    /** How long one {@code kill} command may take before fencer signals the members one by one instead. */
    private static final long KILL_COMMAND_WAIT_MILLIS = 5_000;
    private static final Path PROC = Path.of("/proc");

    private final Process leader;
    private final boolean wholeGroup;

    private ProcessGroup(Process leader, boolean wholeGroup) {
        this.leader = Objects.requireNonNull(leader, "leader");
        this.wholeGroup = wholeGroup;
    }

    /**
     * Starts {@code builder}'s command in a new session and process group, through {@code setsid}; the builder's
     * command is prefixed with it. A child of the JVM is never a process group leader, so {@code setsid(1)} calls
     * {@code setsid(2)} in place and executes the command without forking: the group id is the child's pid.
     *
     * @throws IOException when the command or {@code setsid} is not found or cannot be executed, saying why
     */
    static ProcessGroup start(ProcessBuilder builder) throws IOException {
        List<String> command = new ArrayList<>(builder.command());
        String path = Objects.requireNonNullElse(builder.environment().get("PATH"), "/usr/bin:/bin");
        // setsid would report a missing command itself, but only once started, as the command's failure: check.
        checkExecutable(command.get(0), path);
        Path setsid = find("setsid", path + File.pathSeparator + "/usr/bin" + File.pathSeparator + "/bin")
                .orElseThrow(() -> new IOException("fencer lock exec needs setsid(1) (util-linux) to run it in its "
                        + "own process group, and found none on PATH (" + path + ")"));
        command.add(0, setsid.toString());
        return new ProcessGroup(builder.command(command).start(), true);
    }

    /** Starts {@code builder}'s command as a plain child, in fencer's own group; signals reach it alone. */
    static ProcessGroup directChildOnly(ProcessBuilder builder) throws IOException {
        return new ProcessGroup(builder.start(), false);
    }

    /** Returns the process fencer started: the group's leader, whose exit status is the command's. */
    Process leader() {
        return leader;
    }

    /** Returns the group's id (the leader's pid). */
    long id() {
        return leader.pid();
    }

    /** Sends SIGTERM to every member. */
    void terminate() {
        signal("TERM");
    }

    /** Sends SIGKILL to every member. */
    void kill() {
        signal("KILL");
    }

    /**
     * Returns the pids of the members that still run (zombies, dead but not yet reaped, are not counted): read from
     * {@code /proc}, so also those that were reparented when their parent died.
     */
    List<Long> livingMembers() {
        if (!wholeGroup) {
            return leader.isAlive() ? List.of(leader.pid()) : List.of();
        }
        return livingMembers(id());
    }

    /** Returns the pids of the processes in group {@code groupId} that still run, from {@code /proc}. */
    static List<Long> livingMembers(long groupId) {
        List<Long> members = new ArrayList<>();
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(PROC, "[0-9]*")) {
            for (Path entry : entries) {
                long pid = Long.parseLong(entry.getFileName().toString());
                Optional<ProcStat> stat = ProcStat.read(pid);
                if (stat.isPresent() && stat.get().groupId() == groupId && stat.get().running()) {
                    members.add(pid);
                }
            }
        } catch (IOException e) {
            throw new IllegalStateException("cannot list /proc to find the members of process group " + groupId
                    + " (fencer lock exec needs Linux): " + e.getMessage(), e);
        }
        return members;
    }

    private void signal(String signalName) {
        boolean force = "KILL".equals(signalName);
        if (wholeGroup && !killCommand(signalName)) {
            for (long pid : livingMembers()) { // racy against forks, hence only when the kill command failed
                ProcessHandle.of(pid).ifPresent(member -> destroy(member, force));
            }
        }
        // Also the leader by its pid: a child that has not reached setsid(2) yet is still in fencer's group.
        destroy(leader.toHandle(), force);
    }

    private static void destroy(ProcessHandle process, boolean force) {
        if (force) {
            process.destroyForcibly();
        } else {
            process.destroy();
        }
    }

    /** Runs {@code kill -SIGNAL -- -PGID}; returns false when it could not be run (not when the group is empty). */
    private boolean killCommand(String signalName) {
        try {
            Process kill = new ProcessBuilder("kill", "-" + signalName, "--", "-" + id())
                    .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            if (!kill.waitFor(KILL_COMMAND_WAIT_MILLIS, TimeUnit.MILLISECONDS)) {
                kill.destroyForcibly();
                return false;
            }
            return true; // exit status 1 only says that no member was left to signal
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** Returns the file that execvp(3) would run for {@code name} on {@code path}, or empty when there is none. */
    static Optional<Path> find(String name, String path) {
        if (name.contains("/")) {
            return Files.exists(Path.of(name)) ? Optional.of(Path.of(name)) : Optional.empty();
        }
        for (String directory : path.split(File.pathSeparator)) {
            Path file = Path.of(directory.isEmpty() ? "." : directory, name);
            if (Files.isRegularFile(file) && Files.isExecutable(file)) {
                return Optional.of(file);
            }
        }
        return Optional.empty();
    }

    /** Throws, with the reason execvp(3) would give, unless {@code name} on {@code path} can be executed. */
    private static void checkExecutable(String name, String path) throws IOException {
        Path file = find(name, path).orElseThrow(() -> new IOException("No such file or directory"));
        if (!Files.isRegularFile(file) || !Files.isExecutable(file)) {
            throw new IOException("Permission denied");
        }
    }

    /** The fields of {@code /proc/PID/stat} that tell a process's group and whether it still runs. */
    record ProcStat(char state, long groupId, long sessionId) {
        /** Returns the stat of {@code pid}, or empty when it has exited meanwhile. */
        static Optional<ProcStat> read(long pid) {
            String text;
            try {
                text = Files.readString(PROC.resolve(Long.toString(pid)).resolve("stat"), StandardCharsets.UTF_8);
            } catch (IOException | SecurityException exitedMeanwhile) {
                return Optional.empty();
            }
            // "pid (comm) state ppid pgrp session ...": comm may hold spaces and parentheses, so split after the last.
            String[] fields = text.substring(text.lastIndexOf(')') + 2).split(" ");
            return Optional.of(new ProcStat(fields[0].charAt(0), Long.parseLong(fields[2]),
                    Long.parseLong(fields[3])));
        }

        /** True unless the process is a zombie or dead: it can still act. */
        boolean running() {
            return state != 'Z' && state != 'X' && state != 'x';
        }
    }

    @Override
    public String toString() {
        return wholeGroup ? "process group " + id() : "process " + id() + " (without its descendants)";
    }
}
