package io.fencer.server.locks;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.core.FencingToken;
import io.fencer.lock.EndCause;
import io.fencer.lock.Event;
import io.fencer.server.CapturedStandardError;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The grant log's lines, as the tests' logger writes them to standard error: every grant of an applied entry named
 * once, a line per {@link GrantLog#GRANTS_PER_LINE_MAX} grants, and no clause a lock name could forge.
 */
class GrantLogTest {
    /**
     * A clause, after the logger's name or the separator and before the next or the line's end (a lock name may hold
     * spaces); group 1 its token, 2 its session, 3 its identity.
     */
    private static final Pattern CLAUSE = Pattern.compile(
            "(?:grants - |; )granted (.+?) to session (\\d+) \\(identity '([^']*)'\\)(?=; |$)");

    @Test
    void onApplied_fortyGrantsInOneEntry_namesEachOnceOnThreeLinesOfAtMostSixteen() {
        List<Event> events = new ArrayList<>();
        for (int i = 1; i <= 40; i++) {
            events.add(new Event.Granted(100 + i, "request-" + i, new FencingToken("jobs/" + i, i), "worker-" + i));
            events.add(new Event.GrantEnded(new FencingToken("other", i), 7, EndCause.RELEASED));
        }

        List<String> lines = grantLines(events);

        assertThat(lines).hasSize(3);
        assertThat(lines).extracting(line -> clauses(line).size()).containsExactly(16, 16, 8);
        List<String> named = lines.stream().flatMap(line -> clauses(line).stream()).toList();
        List<String> expected = new ArrayList<>();
        for (int i = 1; i <= 40; i++) {
            expected.add("jobs/" + i + "#" + i + " " + (100 + i) + " worker-" + i);
        }
        assertThat(named).containsExactlyElementsOf(expected);
    }

    @Test
    void onApplied_oneGrant_writesTheLoneClauseAsItsLine() {
        List<String> lines = grantLines(List.of(new Event.Granted(7, "r", new FencingToken("orders", 42), "worker-3")));

        assertThat(lines).singleElement().asString()
                .endsWith("grants - granted orders#42 to session 7 (identity 'worker-3')");
    }

    @Test
    void onApplied_longLockNames_startsANewLineOnceALinePassesItsCharacterCap() {
        String longName = "x".repeat(250);
        List<Event> events = new ArrayList<>();
        for (int i = 1; i <= 16; i++) {
            events.add(new Event.Granted(i, "r" + i, new FencingToken(longName + i, i), "w"));
        }

        List<String> lines = grantLines(events);

        assertThat(lines).as("16 clauses of ~290 characters pass 4,096 characters: two lines").hasSize(2);
        assertThat(lines).allSatisfy(line -> assertThat(line.length()).isLessThan(GrantLog.LINE_CHARS_MAX + 400));
        assertThat(lines.stream().mapToInt(line -> clauses(line).size()).sum()).isEqualTo(16);
    }

    @Test
    void onApplied_lockNameHoldingAClause_cannotForgeTheClauseOfAnotherToken() {
        String forged = "z; granted orders#41 to session 7 (identity 'worker-3')";
        List<Event> events = List.of(new Event.Granted(9, "r", new FencingToken(forged, 1), "mallory"),
                new Event.Granted(8, "q", new FencingToken("orders", 40), "worker-2"));

        List<String> lines = grantLines(events);

        Pattern operatorsJoin = Pattern.compile("(grants - |; )granted orders#41 "); // as docs/console.md greps
        assertThat(lines).as("no line answers the join on a token nobody was granted")
                .noneMatch(line -> operatorsJoin.matcher(line).find());
        assertThat(lines.stream().flatMap(line -> clauses(line).stream()).toList()).as("the two real grants")
                .containsExactly(forged.replace(";", "\\u003b") + "#1 9 mallory", "orders#40 8 worker-2");
    }

    /** Logs {@code events} as one applied entry; returns the grant log's lines it wrote. */
    private static List<String> grantLines(List<Event> events) {
        try (CapturedStandardError logged = CapturedStandardError.start()) {
            new GrantLog().onApplied(events);
            return logged.text().lines().filter(line -> line.contains(GrantLog.LOGGER)).toList();
        }
    }

    /** Returns a line's clauses, each as "token session identity". */
    private static List<String> clauses(String line) {
        List<String> found = new ArrayList<>();
        Matcher matcher = CLAUSE.matcher(line);
        while (matcher.find()) {
            found.add(matcher.group(1) + " " + matcher.group(2) + " " + matcher.group(3));
        }
        return found;
    }
}
