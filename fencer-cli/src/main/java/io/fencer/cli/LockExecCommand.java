package io.fencer.cli;

import io.fencer.cli.exec.GrantExec;
import io.fencer.client.FencedLock;
import io.fencer.client.FencerClient;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletionStage;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/**
 * {@code fencer lock exec NAME -- CMD ARGS...}: runs a command while holding a lock, like {@code flock(1)}, and
 * hands it the fencing token in its environment. The command runs in its own process group, which is stopped
 * before the local lease can end (see {@code exec.ChildSupervisor}).
 */
@Command(name = "exec", mixinStandardHelpOptions = true,
        description = {"Acquires a lock and runs CMD with FENCER_LOCK, FENCER_TOKEN (the sequencer) and "
                + "FENCER_TOKEN_VALUE (and FENCER_TOKEN_MODE, exclusive or shared) in its environment; releases the "
                + "lock when CMD ends and exits with CMD's status.",
            "",
            "Fails closed. CMD runs in its own session and process group (through setsid(1), Linux only; it has no "
                + "controlling terminal). The local lease counts from the send time of the last acknowledged "
                + "keepalive, for --ttl less 1%% + 5 ms. When the lease is in jeopardy (no keepalive acknowledged "
                + "for 2/3 of --ttl) or lost, or less of it is left than --kill-after + 150 ms, the whole group "
                + "gets SIGTERM, then SIGKILL after --kill-after or once 150 ms of the local lease are left, "
                + "whichever is first; fencer says why on stderr and exits 3 (or --lost-exit-code). When CMD exits "
                + "by itself, what it left running in its group is stopped the same way before the lock is released. "
                + "CMD's own status 3 or 4 reads like fencer's: choose --lost-exit-code and --conflict-exit-code "
                + "that CMD does not use.",
            "",
            "Guaranteed while fencer itself runs in time: no process of the group runs when the local lease ends, "
                + "even one that ignores SIGTERM or whose parent died. Not guaranteed: a descendant that calls "
                + "setsid or setpgid itself leaves the group and is not tracked (that needs cgroups); a paused "
                + "fencer or machine acts late, and a fencer killed with SIGKILL cannot act at all. Writes must "
                + "carry FENCER_TOKEN to a resource that checks it."})
final class LockExecCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "NAME", converter = Converters.LockName.class,
            description = "The lock's name.")
    String name;

    @Parameters(index = "1..*", arity = "1..*", paramLabel = "CMD",
            description = "The command and its arguments; put them after --.")
    List<String> command;

    @Option(names = "--ttl", paramLabel = "DURATION", defaultValue = "10s", converter = Durations.SessionTtl.class,
            description = "Session lease; a holder silent this long loses the lock (default: ${DEFAULT-VALUE}).")
    Duration ttl;

    @Option(names = "--wait", paramLabel = "DURATION", defaultValue = "30s", converter = Durations.Wait.class,
            description = "How long to wait in line; exit 4 (or --conflict-exit-code) when not granted by then "
                    + "(default: ${DEFAULT-VALUE}).")
    Duration wait;

    @Option(names = "--kill-after", paramLabel = "DURATION", defaultValue = "5s",
            converter = Durations.Converter.class,
            description = "After SIGTERM, how long CMD's group may take to exit before SIGKILL (default: "
                    + "${DEFAULT-VALUE}); capped at a third of --ttl and by the local lease left.")
    Duration killAfter;

    @Option(names = "--shared",
            description = "Hold the lock in shared mode (a reader of a read-write lock): CMD runs beside other "
                    + "shared holders and never beside an exclusive one; FENCER_TOKEN is then a shared-mode token, "
                    + "which resources accept for fenced reads and refuse for writes (MODE_MISMATCH).")
    boolean shared;

    /** For the test that shows what the process group buys; hidden, since it gives up the guarantee. */
    @Option(names = "--signal-child-only", hidden = true,
            description = "For tests: run CMD as a plain child and signal it alone, as before process groups.")
    boolean signalChildOnly;

    @Mixin
    ExecExitCodes exitCodes;

    @Mixin
    ClientOptions client;

    @ParentCommand
    LockCommand parent;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws InterruptedException, IOException {
        CompletionStage<String> stopRequested = parent.main.stopSignals();
        GrantExec exec = new GrantExec(ttl, killAfter, signalChildOnly, command, exitCodes.leaseLost,
                spec.commandLine().getErr());
        FencerClient fencer = client.connect(); // the run closes it: after a lost lease, without waiting
        return exec.run(fencer, stopRequested, session -> {
            FencedLock lock = session.lock(name);
            return shared ? lock.acquireShared(wait) : lock.acquire(wait);
        }, grant -> Map.of());
    }
}
