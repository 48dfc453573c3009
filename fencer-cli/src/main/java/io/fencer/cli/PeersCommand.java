package io.fencer.cli;

import io.fencer.client.FencerClient;
import io.fencer.client.PeerStatus;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

/**
 * {@code fencer peers}: the group's membership at run time. {@code list} shows the configuration as the leader sees
 * it; {@code add} adds a learner (started first with {@code fencer server --join}), {@code promote} makes it a voter,
 * {@code remove} removes a peer. Each change needs {@code admin} under an ACL and is refused, changing nothing, when
 * the group cannot take it.
 */
// The subcommands are listed in CommandTree, which builds in full only those that a command line names.
@Command(name = "peers", mixinStandardHelpOptions = true,
        description = {"Lists the group's peers and changes them at run time.",
            "To add a peer: start it with 'fencer server --id ID --join A,B,C', then 'fencer peers add ID --raft "
                    + "HOST:PORT --client HOST:PORT', then 'fencer peers promote ID' once 'fencer peers list' shows "
                    + "it live."})
final class PeersCommand implements Runnable {
    @ParentCommand
    Main main;

    @Spec
    CommandSpec spec;

    @Override
    public void run() {
        throw new ParameterException(spec.commandLine(), "Missing command: choose list, add, promote or remove");
    }

    /** {@code fencer peers list}: the configuration, as a table or JSON. */
    @Command(name = "list", mixinStandardHelpOptions = true,
            description = "Shows every peer: role, addresses, leader, progress, liveness.")
    static final class List implements Callable<Integer> {
        @Option(names = "--json", description = "Print a JSON array of the peers.")
        boolean json;

        @Mixin
        ClientOptions client;

        @Spec
        CommandSpec spec;

        @Override
        public Integer call() {
            try (FencerClient fencer = client.connect()) {
                print(spec, fencer.peers().list(), json);
            }
            return Main.EXIT_OK;
        }
    }

    /** {@code fencer peers add ID --raft HOST:PORT --client HOST:PORT}: adds a learner. */
    @Command(name = "add", mixinStandardHelpOptions = true,
            description = {"Adds a learner, which catches up from the leader.",
                "Start it first: fencer server --id ID --join A,B,C ..."})
    static final class Add implements Callable<Integer> {
        @Parameters(index = "0", paramLabel = "ID", description = "The new peer's id (its --id).")
        String id;

        @Option(names = "--raft", required = true, paramLabel = "HOST:PORT", converter = Converters.Endpoint.class,
                description = "Where the other peers reach its Raft port.")
        String raftAddress;

        @Option(names = "--client", required = true, paramLabel = "HOST:PORT",
                converter = Converters.Endpoint.class, description = "Where clients reach it.")
        String clientAddress;

        @Mixin
        ClientOptions client;

        @Spec
        CommandSpec spec;

        @Override
        public Integer call() {
            try (FencerClient fencer = client.connect()) {
                print(spec, fencer.peers().add(id, raftAddress, clientAddress), false);
            }
            return Main.EXIT_OK;
        }
    }

    /** {@code fencer peers promote ID}: makes a learner a voter. */
    @Command(name = "promote", mixinStandardHelpOptions = true,
            description = "Makes a learner a voter, once it has caught up.")
    static final class Promote implements Callable<Integer> {
        @Parameters(index = "0", paramLabel = "ID", description = "The learner's id.")
        String id;

        @Mixin
        ClientOptions client;

        @Spec
        CommandSpec spec;

        @Override
        public Integer call() {
            try (FencerClient fencer = client.connect()) {
                print(spec, fencer.peers().promote(id), false);
            }
            return Main.EXIT_OK;
        }
    }

    /** {@code fencer peers remove ID}: removes a voter or a learner. */
    @Command(name = "remove", mixinStandardHelpOptions = true,
            description = "Removes a voter or a learner. Refused when the voters left would hold no live majority, "
                    + "or for the last voter.")
    static final class Remove implements Callable<Integer> {
        @Parameters(index = "0", paramLabel = "ID", description = "The peer's id.")
        String id;

        @Mixin
        ClientOptions client;

        @Spec
        CommandSpec spec;

        @Override
        public Integer call() {
            try (FencerClient fencer = client.connect()) {
                print(spec, fencer.peers().remove(id), false);
            }
            return Main.EXIT_OK;
        }
    }

    private static void print(CommandSpec spec, java.util.List<PeerStatus> peers, boolean json) {
        PrintWriter out = spec.commandLine().getOut();
        out.println(json ? Json.array(peers.stream().map(PeersCommand::toJson).toList()) : table(peers));
        out.flush();
    }

    /** What the table shows for progress that the leader does not know (a peer it has never heard from). */
    static final String UNKNOWN = "unknown";

    /** Returns the JSON object of one peer: null for a match index or a last answer the leader does not know. */
    static Json toJson(PeerStatus peer) {
        return Json.object()
                .add("id", peer.id())
                .add("role", peer.voter() ? "voter" : "learner")
                .add("raftAddress", peer.raftAddress())
                .add("clientAddress", peer.clientAddress())
                .add("leader", peer.leader())
                .add("matchIndex", boxed(peer.matchIndex()))
                .add("lastHeardMillis", boxed(peer.lastHeardMillis()))
                .add("live", peer.live());
    }

    /** Returns the peers as an aligned text table with a header row. */
    static String table(java.util.List<PeerStatus> peers) {
        java.util.List<String[]> rows = new ArrayList<>();
        rows.add(new String[] {"ID", "ROLE", "RAFT", "CLIENT", "LEADER", "MATCH", "HEARD", "LIVE"});
        for (PeerStatus peer : peers) {
            String heard = peer.leader() ? "-" : peer.lastHeardMillis().stream().mapToObj(millis -> millis + " ms")
                    .findFirst().orElse(UNKNOWN);
            rows.add(new String[] {peer.id(), peer.voter() ? "voter" : "learner", peer.raftAddress(),
                peer.clientAddress(), peer.leader() ? "yes" : "", peer.matchIndex().stream()
                        .mapToObj(Long::toString).findFirst().orElse(UNKNOWN), heard, peer.live() ? "yes" : "no"});
        }
        return LockStatusCommand.aligned(rows);
    }

    private static Long boxed(OptionalLong value) {
        return value.isPresent() ? value.getAsLong() : null;
    }
}
