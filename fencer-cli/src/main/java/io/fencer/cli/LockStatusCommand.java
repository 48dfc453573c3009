package io.fencer.cli;

import io.fencer.client.FencerClient;
import io.fencer.client.LockStatus;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/** {@code fencer lock status [NAME]}: one lock, or every lock held, waited for or delayed, as a table or JSON. */
@Command(name = "status", mixinStandardHelpOptions = true,
        description = "Shows one lock, or all locks that are held, waited for or delayed.")
final class LockStatusCommand implements Callable<Integer> {
    /** The most locks listed; the service's own maximum for one List call. */
    static final int LIST_LIMIT = 1_000;

    @Parameters(index = "0", arity = "0..1", paramLabel = "NAME", converter = Converters.LockName.class,
            description = "The lock to describe (default: list all).")
    String name;

    @Option(names = "--json", description = "Print JSON: an object for NAME, an array for the list.")
    boolean json;

    @Option(names = "--after", paramLabel = "NAME", converter = Converters.LockName.class,
            description = "List only locks whose names sort after NAME: the last one a list showed, for the next "
                    + LIST_LIMIT + ".")
    String after;

    @Mixin
    ClientOptions client;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        try (FencerClient fencer = client.connect()) {
            if (name != null) {
                LockStatus status = fencer.describe(name);
                out.println(json ? toJson(status) : table(List.of(status)));
            } else {
                List<LockStatus> locks = fencer.list("", after, LIST_LIMIT);
                if (json) {
                    out.println(Json.array(locks.stream().map(LockStatusCommand::toJson).toList()));
                } else {
                    out.println(locks.isEmpty() ? "no lock is held, waited for or delayed" : table(locks));
                }
                if (locks.size() >= LIST_LIMIT) {
                    spec.commandLine().getErr().println("fencer: showing " + LIST_LIMIT + " locks only; --after "
                            + locks.get(locks.size() - 1).lock() + " lists the next");
                }
            }
        }
        out.flush();
        return Main.EXIT_OK;
    }

    /** Returns the JSON object of one lock's status. */
    static Json toJson(LockStatus status) {
        return Json.object()
                .add("lock", status.lock())
                .add("holder", status.holder() == null ? null : status.holder().toString())
                .add("holderSequencer", status.holder() == null ? null : status.holder().sequencer())
                .add("holderToken", status.holder() == null ? null : Long.valueOf(status.holder().value()))
                .add("holderIdentity", status.holderIdentity())
                .addLongs("waiterSessionIds", status.waiterSessionIds())
                .add("waitersTotal", status.waitersTotal())
                .add("lastToken", status.lastToken())
                .add("delayed", status.delayed())
                .add("lastEnd", status.lastEnd())
                .addObjects("sharedHolders", status.sharedHolders().stream()
                        .map(token -> Json.object().add("token", token.toString()).add("value", token.value())
                                .add("sequencer", token.sequencer()))
                        .toList())
                .add("sharedHoldersTotal", status.sharedHoldersTotal());
    }

    /**
     * Returns the exclusive holder's token, or how many readers share the lock and the earliest one's token (the
     * latest may be past the first 1,000 the service lists).
     */
    private static String holderText(LockStatus status) {
        if (status.holder() != null) {
            return status.holder().toString();
        }
        List<io.fencer.core.FencingToken> readers = status.sharedHolders();
        return readers.isEmpty() ? "-" : status.sharedHoldersTotal() + " shared, earliest " + readers.get(0);
    }

    /** Returns the locks as an aligned text table with a header row. */
    static String table(List<LockStatus> locks) {
        List<String[]> rows = new ArrayList<>();
        rows.add(new String[] {"LOCK", "HOLDER", "IDENTITY", "WAITERS", "LAST TOKEN", "DELAYED", "LAST END"});
        for (LockStatus status : locks) {
            rows.add(new String[] {
                status.lock(),
                holderText(status),
                status.holderIdentity() == null ? "-" : status.holderIdentity(),
                Integer.toString(status.waitersTotal()),
                Long.toString(status.lastToken()),
                status.delayed() ? "yes" : "no",
                status.lastEnd() == null ? "-" : status.lastEnd()});
        }
        return aligned(rows);
    }

    /** Returns {@code rows} (a header row first) as a text table, each column as wide as its widest cell. */
    static String aligned(List<String[]> rows) {
        int[] widths = new int[rows.get(0).length];
        for (String[] row : rows) {
            for (int column = 0; column < row.length; column++) {
                widths[column] = Math.max(widths[column], row[column].length());
            }
        }
        StringBuilder text = new StringBuilder();
        for (String[] row : rows) {
            StringBuilder line = new StringBuilder();
            for (int column = 0; column < row.length; column++) {
                line.append(String.format(Locale.ROOT, "%-" + widths[column] + "s", row[column])).append("  ");
            }
            text.append(line.toString().stripTrailing()).append('\n');
        }
        return text.toString().stripTrailing();
    }
}
