package io.fencer.cli;

import io.fencer.client.FencerClient;
import io.fencer.client.Revocation;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code fencer lock revoke NAME}: an operator takes a lock away from its holder and prints the revoked token. */
@Command(name = "revoke", mixinStandardHelpOptions = true,
        description = {"Revokes the exclusive grant that holds a lock (needs the admin permission under ACLs).",
            "The holder's session loses the lock at once; the next waiter is granted under a higher token (after the"
                + " server's --lock-delay, when set), so fenced resources refuse the old holder once the new one has"
                + " written. Prints the revoked token, then the next grant or why there is none.",
            "A revoke whose answer was lost (a timeout, a cut connection) is retried; when the retry finds the grant"
                + " already ended and the lock free or held by a later grant, it prints that the grant was already"
                + " ended (perhaps by this call's first attempt) and exits 0: `fencer lock watch NAME` tells who"
                + " ended it.",
            "Exit codes: 0 revoked, or already ended as above; 1 nobody holds the lock (nothing changed) or another"
                + " error; 6 permission denied."})
final class LockRevokeCommand implements Callable<Integer> {
    @Parameters(index = "0", paramLabel = "NAME", converter = Converters.LockName.class,
            description = "The lock whose holder loses it.")
    String name;

    @Option(names = "--json", description = "Print JSON: revoked, next (null when none), delayed, alreadyEnded (a"
            + " retry found the grant already ended; next is then the holder at that time).")
    boolean json;

    @Mixin
    ClientOptions client;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        try (FencerClient fencer = client.connect()) {
            Revocation revoked = fencer.revoke(name);
            if (json) {
                out.println(Json.object()
                        .add("revoked", revoked.revoked().toString())
                        .add("revokedToken", revoked.revoked().value())
                        .add("next", revoked.next() == null ? null : revoked.next().toString())
                        .add("nextToken", revoked.next() == null ? null : Long.valueOf(revoked.next().value()))
                        .add("delayed", revoked.delayed())
                        .add("alreadyEnded", revoked.alreadyEnded()));
            } else if (revoked.alreadyEnded()) {
                out.println("the grant " + revoked.revoked() + " was already ended (perhaps by this call's first"
                        + " attempt, whose reply was lost); see `fencer lock watch " + name + "`");
                out.println(revoked.next() != null ? "held now by: " + revoked.next() : "the lock is free now");
            } else {
                out.println("revoked " + revoked.revoked());
                out.println(revoked.next() != null ? "granted next: " + revoked.next()
                        : revoked.delayed() ? "the lock waits out its lock-delay before its next grant"
                        : "no waiter: the lock is free");
            }
        }
        out.flush();
        return Main.EXIT_OK;
    }
}
