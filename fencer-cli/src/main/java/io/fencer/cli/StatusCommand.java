package io.fencer.cli;

import io.fencer.client.FencerClient;
import io.fencer.client.ServerStatus;
import io.fencer.core.FencingToken;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code fencer status}: the format levels, generation and log position of the peer reached. */
@Command(name = "status", mixinStandardHelpOptions = true,
        description = "Shows the peer reached: its release's and the group's format levels, the token generation, "
                + "the highest token and the applied log index.")
final class StatusCommand implements Callable<Integer> {
    @Option(names = "--json", description = "Print a JSON object.")
    boolean json;

    @Mixin
    ClientOptions client;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        ServerStatus status;
        try (FencerClient fencer = client.connect()) {
            status = fencer.status();
        }
        PrintWriter out = spec.commandLine().getOut();
        if (json) {
            out.println(Json.object().add("peerId", status.peerId())
                    .add("releaseFormatLevel", status.releaseFormatLevel())
                    .add("groupFormatLevel", status.groupFormatLevel()).add("generation", status.generation())
                    .add("highestToken", status.highestToken()).add("appliedIndex", status.appliedIndex())
                    .add("leader", status.leader()).add("leaderAddress", status.leaderAddress()));
        } else {
            out.println("peer " + status.peerId() + (status.leader() ? " (leader)" : ", leader "
                    + (status.leaderAddress().isEmpty() ? "unknown" : status.leaderAddress())));
            out.println("format level: group " + status.groupFormatLevel() + ", this release "
                    + status.releaseFormatLevel());
            out.println("token generation " + status.generation() + ", highest token " + status.highestToken()
                    + " (generation " + FencingToken.generationOf(status.highestToken()) + ", counter "
                    + FencingToken.counterOf(status.highestToken()) + ")");
            out.println("applied log index " + status.appliedIndex());
        }
        out.flush();
        return Main.EXIT_OK;
    }
}
