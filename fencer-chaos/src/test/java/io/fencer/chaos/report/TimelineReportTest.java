package io.fencer.chaos.report;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.chaos.check.CheckResult;
import io.fencer.chaos.check.Violation;
import io.fencer.chaos.history.HistoryEvent;
import io.fencer.chaos.history.HistoryEvent.Op;
import io.fencer.chaos.history.HistoryEvent.Type;
import io.fencer.chaos.workload.Workload;
import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.xml.XMLConstants;
import javax.xml.parsers.DocumentBuilder;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.w3c.dom.NodeList;

/** The timeline report: its picture's content, its escaping, its HTML page and its size on long histories. */
class TimelineReportTest {
    private static final String SVG_NAMESPACE = "http://www.w3.org/2000/svg";
    private static final String SCRIPT_ERROR = "stale token 7 < 8 <script>alert('x')</script> & more";
    private static final long ORIGIN_MICROS = 5_000_000;

    @TempDir
    Path directory;

    @Test
    void svg_smallHistory_drawsOneLanePerProcessInOrder() throws Exception {
        Document picture = parse(TimelineReport.svg("run", facts(), smallHistory(), smallResult()));

        assertThat(texts(elementsWithClass(picture, "fr-lane-label"))).containsExactly("w1", "w2", "store");
    }

    @Test
    void svg_smallHistory_writesTheGrantsTokensOnTheirHolds() throws Exception {
        Document picture = parse(TimelineReport.svg("run", facts(), smallHistory(), smallResult()));

        Element tokens = elementsWithClass(picture, "fr-tokens").get(0);
        assertThat(texts(children(tokens, "text"))).containsExactlyInAnyOrder("7", "8", "9");
        assertThat(titles(children(elementsWithClass(picture, "fr-holds").get(0), "rect"))).hasSize(3)
                .contains("w1 holds token 7 from 0.010000 s to 2.070000 s (release fail: session expired)")
                .contains("w2 holds token 8 from 1.500000 s to 1.900000 s (release ok)")
                .contains("w1 holds token 9 from 2.700000 s to 3.200000 s (release ok)");
    }

    @Test
    void svg_pauseOfW1SpanningW2sGrant_drawsThePauseOnW1sLaneAcrossTheGrant() throws Exception {
        Document picture = parse(TimelineReport.svg("run", facts(), smallHistory(), smallResult()));

        List<Element> pauses = children(elementsWithClass(picture, "fr-pauses").get(0), "rect");
        assertThat(pauses).hasSize(1);
        Element pause = pauses.get(0);
        assertThat(title(pause)).startsWith("w1 paused (SIGSTOP) from 0.100000 s to 2.000000 s");
        assertThat(laneAt(picture, number(pause, "y"))).isEqualTo("w1");
        Element w2Hold = children(elementsWithClass(picture, "fr-holds").get(0), "rect").stream()
                .filter(rect -> title(rect).startsWith("w2 ")).findFirst().orElseThrow();
        assertThat(number(pause, "x")).isLessThan(number(w2Hold, "x"));
        assertThat(number(pause, "x") + number(pause, "width"))
                .isGreaterThan(number(w2Hold, "x") + number(w2Hold, "width"));
    }

    @Test
    void svg_storeKilledAndRestarted_drawsKillRestartAndDownTimeOnStoreLane() throws Exception {
        Document picture = parse(TimelineReport.svg("run", facts(), smallHistory(), smallResult()));

        List<Element> kills = elementsWithClass(picture, "fr-kill");
        assertThat(kills).hasSize(1);
        assertThat(title(kills.get(0))).isEqualTo("2.500000 s nemesis info kill target=store");
        assertThat(laneAt(picture, number(kills.get(0), "y"))).isEqualTo("store");
        assertThat(elementsWithClass(picture, "fr-restart")).singleElement()
                .satisfies(restart -> assertThat(laneAt(picture, number(restart, "y"))).isEqualTo("store"));
        assertThat(titles(children(elementsWithClass(picture, "fr-downs").get(0), "rect")))
                .containsExactly("store down: killed at 2.500000 s, restarted at 3.000000 s");
    }

    @Test
    void svg_writeOutcomes_drawsAcknowledgedRefusedAndUnknownMarks() throws Exception {
        Document picture = parse(TimelineReport.svg("run", facts(), smallHistory(), smallResult()));

        Map<String, String> titleBySymbol = new LinkedHashMap<>();
        for (Element mark : children(elementsWithClass(picture, "fr-writes").get(0), "use")) {
            titleBySymbol.put(mark.getAttribute("href"), title(mark));
        }
        assertThat(titleBySymbol).containsOnlyKeys("#fr-ok", "#fr-refused", "#fr-unknown");
        assertThat(titleBySymbol.get("#fr-refused"))
                .isEqualTo("2.050000 s w1 fail write token=7 value=1 error=" + SCRIPT_ERROR);
        assertThat(titleBySymbol.get("#fr-unknown")).contains("w1 unknown write token=9 value=2");
    }

    @Test
    void svg_oneViolation_drawsItInRedOnItsProcessLane() throws Exception {
        Document picture = parse(TimelineReport.svg("run", facts(), smallHistory(), smallResult()));

        List<Element> violations = elementsWithClass(picture, "fr-violation");
        assertThat(violations).hasSize(1);
        assertThat(violations.get(0).getAttribute("href")).isEqualTo("#fr-violation");
        assertThat(title(violations.get(0))).contains("w1 token=9 violates no-lost-update");
        assertThat(laneAt(picture, number(violations.get(0), "y"))).isEqualTo("w1");
        Element symbol = elementById(picture, "fr-violation");
        assertThat(symbol.getAttribute("stroke")).isEqualTo(TimelineSvg.RED);
        assertThat(allText(picture)).contains("1 violation").contains("no-lost-update: 1");
    }

    @Test
    void svg_errorHoldingScript_isEscaped() throws Exception {
        String svg = TimelineReport.svg("run <b>&</b>", facts(), smallHistory(), smallResult());

        assertThat(svg).doesNotContain("<script").contains("&lt;script&gt;").contains("run &lt;b&gt;&amp;");
        assertThat(allText(parse(svg))).contains(SCRIPT_ERROR);
    }

    @Test
    void svg_violationOfTheFinalState_listsItInTheRedBox() throws Exception {
        Violation lost = new Violation(CheckResult.NO_LOST_UPDATE, 0, "final", 0, "final value 1 < 2 increments");
        CheckResult result = result(List.of(lost), Map.of(CheckResult.NO_LOST_UPDATE, 1));

        Document picture = parse(TimelineReport.svg("run", facts(), smallHistory(), result));

        assertThat(elementsWithClass(picture, "fr-violation")).isEmpty();
        Element box = elementsWithClass(picture, "fr-final-violations").get(0);
        assertThat(box.getTextContent()).contains("1 violation of the final state")
                .contains("no-lost-update: final: final value 1 < 2 increments");
    }

    @Test
    void svg_workerKilledDuringWrite_endsItsHoldAndDrawsTheWriteUnknownAndTheLaneDown() throws Exception {
        List<HistoryEvent> history = List.of(
                at(0, "w1", Type.INVOKE, Op.ACQUIRE),
                at(100, "w1", Type.OK, Op.ACQUIRE).withToken(4),
                at(200, "w1", Type.INVOKE, Op.WRITE).withToken(4).withValue("1"),
                info(300, Op.KILL, "w1"),
                info(900, Op.RESTART, "w1"),
                at(1_000, "final", Type.OK, Op.FINAL_READ).withValue("1"));

        Document picture = parse(TimelineReport.svg("run", facts(), history, result(List.of(), Map.of())));

        assertThat(titles(children(elementsWithClass(picture, "fr-holds").get(0), "rect")))
                .containsExactly("w1 holds token 4 from 0.100000 s to 0.300000 s (ends: the worker was killed)");
        assertThat(titles(children(elementsWithClass(picture, "fr-writes").get(0), "use"))).containsExactly(
                "0.200000 s w1 invoke write token=4 value=1 (no completion: the process was killed: unknown)");
        assertThat(titles(children(elementsWithClass(picture, "fr-downs").get(0), "rect")))
                .containsExactly("w1 down: killed at 0.300000 s, restarted at 0.900000 s");
        assertThat(texts(elementsWithClass(picture, "fr-lane-label"))).containsExactly("w1");
    }

    @Test
    void svg_writesDenserThanAPixel_drawsOneMarkWithTheWorstOutcomeCountingTheRest() throws Exception {
        List<HistoryEvent> history = new ArrayList<>();
        history.add(at(0, "w1", Type.OK, Op.WRITE).withToken(1).withValue("1").withRevision(1));
        history.add(at(1, "w1", Type.FAIL, Op.WRITE).withToken(1).withValue("2").withError("stale"));
        history.add(at(2, "w1", Type.OK, Op.WRITE).withToken(2).withValue("2").withRevision(2));
        history.add(at(600_000, "w1", Type.OK, Op.WRITE).withToken(3).withValue("3").withRevision(3));

        Document picture = parse(TimelineReport.svg("run", facts(), history, result(List.of(), Map.of())));

        List<Element> marks = children(elementsWithClass(picture, "fr-writes").get(0), "use");
        assertThat(marks).hasSize(2);
        assertThat(marks.get(0).getAttribute("href")).isEqualTo("#fr-refused");
        assertThat(title(marks.get(0))).startsWith("3 writes from 0.000000 s to 0.002000 s: 2 acknowledged, 1 refused,"
                + " 0 unknown\nworst: 0.001000 s w1 fail write token=1 value=2 error=stale");
        assertThat(marks.get(1).getAttribute("href")).isEqualTo("#fr-ok");
    }

    @Test
    void svg_tenWorkersAndTwoLockServers_ordersLanesNaturally() throws Exception {
        List<HistoryEvent> history = new ArrayList<>();
        for (String process : List.of("w10", "w2", "w1", "w9")) {
            history.add(HistoryEvent.of(ORIGIN_MICROS, process, Type.INVOKE, Op.ACQUIRE));
        }
        history.add(info(1_000, Op.KILL, "lock-n2"));
        history.add(info(2_000, Op.KILL, "lock-n10"));
        history.add(info(3_000, Op.KILL, "store"));

        Document picture = parse(TimelineReport.svg("run", facts(), history, result(List.of(), Map.of())));

        assertThat(texts(elementsWithClass(picture, "fr-lane-label")))
                .containsExactly("w1", "w2", "w9", "w10", "store", "lock-n2", "lock-n10");
    }

    @Test
    void svg_emptyHistory_rendersAndSaysSo() throws Exception {
        String svg = TimelineReport.svg("run", List.of(), List.of(), result(List.of(), Map.of()));

        Document picture = parse(svg);
        assertThat(allText(picture)).contains("empty history: no events").contains("0 violations");
        assertThat(elementsWithClass(picture, "fr-lane-label")).isEmpty();
        assertThat(TimelineReport.html("run", List.of(), List.of(), result(List.of(), Map.of())))
                .contains("empty history: no events");
    }

    @Test
    void html_smallHistory_inlinesThePictureAndTablesWithNothingFetched() {
        String html = TimelineReport.html("run", facts(), smallHistory(), smallResult());

        assertThat(html).startsWith("<!doctype html>").contains("<meta charset=\"utf-8\">")
                .contains("<svg xmlns=\"" + SVG_NAMESPACE + "\"").doesNotContainIgnoringCase("<script")
                .doesNotContain("<?xml");
        assertThat(html).contains("<tr><td>no-lost-update</td><td class=\"number\">1</td>"
                + "<td class=\"fail\">fail</td></tr>");
        assertThat(html).contains("<tr><td>tokens-monotonic</td><td class=\"number\">0</td>"
                + "<td class=\"pass\">pass</td></tr>");
        assertThat(html).contains("<tr><td>grants</td><td class=\"number\">3</td></tr>");
        assertThat(html).contains("<td class=\"number\">3.000000</td><td>w1</td><td class=\"number\">9</td>");
        Matcher addresses = Pattern.compile("https?://[^\"'\\s<>)]*").matcher(html);
        List<String> found = new ArrayList<>();
        while (addresses.find()) {
            found.add(addresses.group());
        }
        assertThat(found).isNotEmpty().allMatch(SVG_NAMESPACE::equals);
        assertThat(Pattern.compile("href=\"(?!#)").matcher(html).find()).isFalse();
    }

    @Test
    void html_moreThan200Violations_listsTheFirst200AndCountsTheRest() {
        List<Violation> violations = new ArrayList<>();
        for (int i = 0; i < 250; i++) {
            violations.add(new Violation(CheckResult.TOKENS_MONOTONIC, ORIGIN_MICROS + 1_000 * i, "w1", 7,
                    "violation number " + i));
        }

        String html = TimelineReport.html("run", facts(), smallHistory(),
                result(violations, Map.of(CheckResult.TOKENS_MONOTONIC, 250)));

        String listed = html.substring(html.indexOf("<h2>Violations</h2>"));
        assertThat(listed).contains("<td>violation number 0</td>").contains("<td>violation number 199</td>")
                .doesNotContain("violation number 200").contains("<p>and 50 more</p>");
    }

    @Test
    void write_andWriteSvg_writeUtf8Files() throws Exception {
        Path html = directory.resolve("report.html");
        Path svg = directory.resolve("timeline.svg");

        TimelineReport.write(html, "run \u2014 \u00e9", facts(), smallHistory(), smallResult());
        TimelineReport.writeSvg(svg, "run \u2014 \u00e9", facts(), smallHistory(), smallResult());

        assertThat(Files.readString(html, StandardCharsets.UTF_8)).contains("<h1>run \u2014 \u00e9</h1>");
        assertThat(Files.readString(svg, StandardCharsets.UTF_8)).startsWith("<?xml")
                .contains("<title>run \u2014 \u00e9</title>");
        parse(Files.readString(svg, StandardCharsets.UTF_8));
    }

    @Test
    void svg_100000EventsOverTenMinutes_staysUnder5Megabytes() throws Exception {
        List<HistoryEvent> history = longHistory(100_000, 10);
        List<Violation> violations = new ArrayList<>();
        for (HistoryEvent event : history) {
            // Every acknowledged write is a violation, as in a control run without fencing: the worst case for size.
            if (event.op() == Op.WRITE && event.type() == Type.OK) {
                violations.add(new Violation(CheckResult.TOKENS_MONOTONIC, event.timeMicros(), event.process(),
                        event.token(), "write of " + event.value() + " under token " + event.token()
                                + " applied after a write under a higher token"));
            }
        }
        CheckResult result = result(violations, Map.of(CheckResult.TOKENS_MONOTONIC, violations.size()));

        String svg = TimelineReport.svg("long run", facts(), history, result);
        String html = TimelineReport.html("long run", facts(), history, result);

        assertThat(history).hasSize(100_000);
        assertThat(violations).hasSizeGreaterThan(9_000);
        assertThat(svg.getBytes(StandardCharsets.UTF_8).length).isLessThan(5_000_000);
        assertThat(html.getBytes(StandardCharsets.UTF_8).length).isLessThan(5_200_000);
        Document picture = parse(svg);
        assertThat(Double.parseDouble(picture.getDocumentElement().getAttribute("width"))).isLessThan(2_600);
        assertThat(elementsWithClass(picture, "fr-kill")).hasSize(countOp(history, Op.KILL));
        assertThat(elementsWithClass(picture, "fr-violation")).isNotEmpty();
    }

    // --- the histories

    private static List<String> facts() {
        return List.of("seed 42", "fencing on", "2 workers, counter, 5 s");
    }

    /**
     * Two counter workers: w1 takes token 7, is paused past its lease while w2 takes token 8 and writes 1; w1 wakes,
     * its stale write is refused; w1 takes token 9 while the store is killed, so its write is unknown (and blamed for
     * a lost update); the store restarts.
     */
    private static List<HistoryEvent> smallHistory() {
        List<HistoryEvent> history = new ArrayList<>();
        history.add(at(0, "w1", Type.INVOKE, Op.ACQUIRE));
        history.add(at(10, "w1", Type.OK, Op.ACQUIRE).withToken(7));
        history.add(at(20, "w1", Type.INVOKE, Op.READ).withToken(7));
        history.add(at(30, "w1", Type.OK, Op.READ).withToken(7).withValue("0"));
        history.add(at(50, "w2", Type.INVOKE, Op.ACQUIRE));
        history.add(info(100, Op.PAUSE, "w1"));
        history.add(at(1_500, "w2", Type.OK, Op.ACQUIRE).withToken(8));
        history.add(at(1_510, "w2", Type.INVOKE, Op.READ).withToken(8));
        history.add(at(1_520, "w2", Type.OK, Op.READ).withToken(8).withValue("0"));
        history.add(at(1_600, "w2", Type.INVOKE, Op.WRITE).withToken(8).withValue("1"));
        history.add(at(1_700, "w2", Type.OK, Op.WRITE).withToken(8).withValue("1").withRevision(1));
        history.add(at(1_800, "w2", Type.INVOKE, Op.RELEASE).withToken(8));
        history.add(at(1_900, "w2", Type.OK, Op.RELEASE).withToken(8));
        history.add(info(2_000, Op.RESUME, "w1"));
        history.add(at(2_010, "w1", Type.INVOKE, Op.WRITE).withToken(7).withValue("1"));
        history.add(at(2_050, "w1", Type.FAIL, Op.WRITE).withToken(7).withValue("1").withError(SCRIPT_ERROR));
        history.add(at(2_060, "w1", Type.INVOKE, Op.RELEASE).withToken(7));
        history.add(at(2_070, "w1", Type.FAIL, Op.RELEASE).withToken(7).withError("session expired"));
        history.add(at(2_080, "w1", Type.INFO, Op.SESSION_LOST));
        history.add(info(2_500, Op.KILL, "store"));
        history.add(at(2_600, "w1", Type.INVOKE, Op.ACQUIRE));
        history.add(at(2_700, "w1", Type.OK, Op.ACQUIRE).withToken(9));
        history.add(at(2_800, "w1", Type.INVOKE, Op.WRITE).withToken(9).withValue("2"));
        history.add(at(2_900, "w1", Type.UNKNOWN, Op.WRITE).withError("UNAVAILABLE: connection refused"));
        history.add(info(3_000, Op.RESTART, "store"));
        history.add(at(3_100, "w1", Type.INVOKE, Op.RELEASE).withToken(9));
        history.add(at(3_200, "w1", Type.OK, Op.RELEASE).withToken(9));
        history.add(at(4_000, "final", Type.OK, Op.FINAL_READ).withValue("1"));
        // The harness merges lines by time; the picture must not rely on the caller having sorted them.
        history.sort((left, right) -> Long.compare(left.timeMicros(), right.timeMicros()));
        return history;
    }

    private static CheckResult smallResult() {
        Violation violation = new Violation(CheckResult.NO_LOST_UPDATE, ORIGIN_MICROS + 3_000_000, "w1", 9,
                "write of 2 under token 9 is unknown and the final value 1 < 2");
        return result(List.of(violation), Map.of(CheckResult.NO_LOST_UPDATE, 1));
    }

    private static CheckResult result(List<Violation> violations, Map<String, Integer> nonZeroCounts) {
        Map<String, Integer> byCheck = new LinkedHashMap<>();
        for (String check : List.of(CheckResult.TOKENS_MONOTONIC, CheckResult.ACKNOWLEDGED_SURVIVE,
                CheckResult.NO_LOST_UPDATE, CheckResult.GRANTS_INCREASE)) {
            byCheck.put(check, nonZeroCounts.getOrDefault(check, 0));
        }
        Map<String, Long> counts = new LinkedHashMap<>();
        counts.put("grants", 3L);
        counts.put("writes_ok", 1L);
        return new CheckResult(Workload.COUNTER, byCheck, violations, counts);
    }

    /** Returns {@code eventCount} events of {@code workers} counter workers over ten minutes, with faults. */
    private static List<HistoryEvent> longHistory(int eventCount, int workers) {
        Random random = new Random(42);
        List<HistoryEvent> history = new ArrayList<>(eventCount);
        long stepMicros = 600_000_000L / eventCount;
        long token = 0;
        long revision = 0;
        for (int i = 0; history.size() < eventCount; i++) {
            long time = ORIGIN_MICROS + history.size() * stepMicros;
            if (i % 1_000 == 999) {
                history.add(info((time - ORIGIN_MICROS) / 1_000, i % 2_000 == 999 ? Op.KILL : Op.RESTART, "store"));
                continue;
            }
            String worker = "w" + (1 + (i / 8) % workers);
            HistoryEvent event = switch (i % 8) {
                case 0 -> HistoryEvent.of(time, worker, Type.INVOKE, Op.ACQUIRE);
                case 1 -> HistoryEvent.of(time, worker, Type.OK, Op.ACQUIRE).withToken(++token);
                case 2 -> HistoryEvent.of(time, worker, Type.INVOKE, Op.READ).withToken(token);
                case 3 -> HistoryEvent.of(time, worker, Type.OK, Op.READ).withToken(token).withValue("" + revision);
                case 4 -> HistoryEvent.of(time, worker, Type.INVOKE, Op.WRITE).withToken(token)
                        .withValue("" + (revision + 1));
                case 5 -> writeOutcome(random, time, worker, token, ++revision);
                case 6 -> HistoryEvent.of(time, worker, Type.INVOKE, Op.RELEASE).withToken(token);
                default -> HistoryEvent.of(time, worker, Type.OK, Op.RELEASE).withToken(token);
            };
            history.add(event);
        }
        return history;
    }

    private static HistoryEvent writeOutcome(Random random, long time, String worker, long token, long revision) {
        HistoryEvent write = HistoryEvent.of(time, worker, Type.OK, Op.WRITE).withToken(token)
                .withValue("" + revision);
        int dice = random.nextInt(10);
        if (dice == 0) {
            return HistoryEvent.of(time, worker, Type.FAIL, Op.WRITE).withToken(token)
                    .withError("stale token " + token + " < " + (token + 1));
        }
        return dice == 1 ? HistoryEvent.of(time, worker, Type.UNKNOWN, Op.WRITE).withToken(token)
                .withError("DEADLINE_EXCEEDED") : write.withRevision(revision);
    }

    private static int countOp(List<HistoryEvent> history, Op op) {
        return (int) history.stream().filter(event -> event.op() == op).count();
    }

    private static HistoryEvent at(long millis, String process, Type type, Op op) {
        return HistoryEvent.of(ORIGIN_MICROS + millis * 1_000, process, type, op);
    }

    private static HistoryEvent info(long millis, Op op, String target) {
        return at(millis, "nemesis", Type.INFO, op).withTarget(target);
    }

    // --- reading the picture

    private static Document parse(String xml) throws Exception {
        DocumentBuilderFactory factory = DocumentBuilderFactory.newInstance();
        factory.setNamespaceAware(true);
        factory.setFeature("http://apache.org/xml/features/disallow-doctype-decl", true);
        factory.setFeature("http://xml.org/sax/features/external-general-entities", false);
        factory.setFeature("http://xml.org/sax/features/external-parameter-entities", false);
        factory.setAttribute(XMLConstants.ACCESS_EXTERNAL_DTD, "");
        factory.setAttribute(XMLConstants.ACCESS_EXTERNAL_SCHEMA, "");
        factory.setXIncludeAware(false);
        factory.setExpandEntityReferences(false);
        DocumentBuilder builder = factory.newDocumentBuilder();
        Document document = builder.parse(new ByteArrayInputStream(xml.getBytes(StandardCharsets.UTF_8)));
        assertThat(document.getDocumentElement().getNamespaceURI()).isEqualTo(SVG_NAMESPACE);
        assertThat(document.getDocumentElement().getLocalName()).isEqualTo("svg");
        return document;
    }

    private static List<Element> elementsWithClass(Document document, String className) {
        List<Element> found = new ArrayList<>();
        NodeList all = document.getElementsByTagNameNS(SVG_NAMESPACE, "*");
        for (int i = 0; i < all.getLength(); i++) {
            Element element = (Element) all.item(i);
            if (element.getAttribute("class").equals(className)) {
                found.add(element);
            }
        }
        return found;
    }

    private static Element elementById(Document document, String id) {
        NodeList all = document.getElementsByTagNameNS(SVG_NAMESPACE, "*");
        for (int i = 0; i < all.getLength(); i++) {
            Element element = (Element) all.item(i);
            if (element.getAttribute("id").equals(id)) {
                return element;
            }
        }
        throw new AssertionError("no element with id " + id);
    }

    private static List<Element> children(Element parent, String localName) {
        List<Element> found = new ArrayList<>();
        for (Node child = parent.getFirstChild(); child != null; child = child.getNextSibling()) {
            if (child instanceof Element element && element.getLocalName().equals(localName)) {
                found.add(element);
            }
        }
        return found;
    }

    private static String title(Element element) {
        List<Element> titles = children(element, "title");
        assertThat(titles).as("title of %s", element.getLocalName()).hasSize(1);
        return titles.get(0).getTextContent();
    }

    private static List<String> titles(List<Element> elements) {
        return elements.stream().map(TimelineReportTest::title).toList();
    }

    private static List<String> texts(List<Element> elements) {
        return elements.stream().map(Element::getTextContent).toList();
    }

    private static String allText(Document document) {
        return document.getDocumentElement().getTextContent();
    }

    private static double number(Element element, String attribute) {
        return Double.parseDouble(element.getAttribute(attribute));
    }

    /** Returns the lane whose label is nearest to {@code y}, at most half a lane away. */
    private static String laneAt(Document picture, double y) {
        String nearest = null;
        double distanceMin = Double.MAX_VALUE;
        for (Element label : elementsWithClass(picture, "fr-lane-label")) {
            // A label sits at its lane's middle; marks sit between the lane's top and bottom.
            double distance = Math.abs(number(label, "y") - 4 - y);
            if (distance < distanceMin) {
                distanceMin = distance;
                nearest = label.getTextContent();
            }
        }
        assertThat(distanceMin).as("distance from y %s to the nearest lane's middle", y).isLessThanOrEqualTo(20);
        return nearest;
    }
}
