package io.fencer.compare;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The Markdown table of {@code bench/store-vs-etcd.sh}: reads the JSON summaries of every run in a directory, named
 * {@code <round>-<workload>-<system>.json}, and prints per workload and system the median writes/s with its
 * min–max, the median of the runs' p50 and p99 latencies, and the ratio of Fencer's three peers to etcd's three
 * members as the median of the rounds' ratios (each round's two runs ran minutes apart, so a drift of the machine
 * hits both).
 */
public final class ComparisonTable {
    /** The systems in the order the script runs them, with the names the table gives them. */
    static final Map<String, String> SYSTEMS = orderedMap("fencer1", "Fencer, one peer", "fencer3",
            "Fencer, three peers", "etcd3", "etcd 3.4, three members");
    /** The workloads, with the names the table gives them. */
    static final Map<String, String> WORKLOADS = orderedMap("own", "own scopes", "one", "one scope");
    /** The most result files one table reads. */
    static final int FILES_MAX = 10_000;
    private static final Pattern NAME = Pattern.compile("(\\d+)-(own|one)-(fencer1|fencer3|etcd3)\\.json");

    /** One run's figures. */
    record Run(int round, String workload, String system, double writesPerSecond, double p50Millis, double p99Millis,
            long staleRefusals, long errors) {}

    private ComparisonTable() {}

    /** Prints the table of the results in directory {@code args[0]}; exits 2 without one. */
    public static void main(String[] args) throws IOException {
        if (args.length != 1) {
            System.err.println("usage: ComparisonTable RESULTS_DIR");
            System.exit(2);
        }
        System.out.print(markdown(read(Path.of(args[0]))));
    }

    /** Reads every result file of {@code directory}; fails on a file that is not a summary. */
    static List<Run> read(Path directory) throws IOException {
        List<Run> runs = new ArrayList<>();
        try (DirectoryStream<Path> files = Files.newDirectoryStream(directory, "*.json")) {
            for (Path file : files) {
                Matcher name = NAME.matcher(file.getFileName().toString());
                if (!name.matches()) {
                    continue;
                }
                if (runs.size() == FILES_MAX) {
                    throw new IOException(directory + " holds more than " + FILES_MAX + " result files");
                }
                String json = Files.readString(file, StandardCharsets.UTF_8);
                checkFormat(file, json);
                runs.add(run(Integer.parseInt(name.group(1)), name.group(2), name.group(3), json));
            }
        }
        return runs;
    }

    /**
     * Refuses a summary of another version than {@link Summary#FORMAT}, whose members may mean something else. One
     * without a version was written before summaries had one, in the shape of version 1.
     */
    static void checkFormat(Path file, String json) throws IOException {
        JsonElement format = JsonParser.parseString(json.strip()).getAsJsonObject().get(Summary.FORMAT_MEMBER);
        if (format != null && !(format.isJsonPrimitive() && format.getAsJsonPrimitive().isNumber()
                && format.getAsInt() == Summary.FORMAT)) {
            throw new IOException(file + " is a summary of format " + format + ", which this table does not know"
                    + " (it reads format " + Summary.FORMAT + ")");
        }
    }

    /** Returns the run that the summary {@code json} describes. */
    static Run run(int round, String workload, String system, String json) {
        JsonObject summary = JsonParser.parseString(json.strip()).getAsJsonObject();
        JsonObject latency = summary.getAsJsonObject("writeLatencyMillis");
        return new Run(round, workload, system, number(summary.get("writesPerSecond")), number(latency.get("p50")),
                number(latency.get("p99")), summary.get("staleRefusals").getAsLong(),
                summary.get("errors").getAsLong());
    }

    /** Returns the Markdown of {@code runs}: one row per workload and system, then the ratios. */
    static String markdown(List<Run> runs) {
        StringBuilder out = new StringBuilder();
        out.append("| workload | system | runs | writes/s (median) | min–max | p50 ms | p99 ms | stale, errors |\n");
        out.append("|---|---|---|---|---|---|---|---|\n");
        for (String workload : WORKLOADS.keySet()) {
            for (String system : SYSTEMS.keySet()) {
                List<Run> of = runs.stream().filter(r -> r.workload().equals(workload) && r.system().equals(system))
                        .toList();
                if (of.isEmpty()) {
                    continue;
                }
                double[] rates = of.stream().mapToDouble(Run::writesPerSecond).toArray();
                out.append(String.format(Locale.ROOT, "| %s | %s | %d | %s | %s–%s | %s | %s | %d, %d |%n",
                        WORKLOADS.get(workload), SYSTEMS.get(system), of.size(), rate(median(rates)),
                        rate(Arrays.stream(rates).min().orElseThrow()), rate(Arrays.stream(rates).max().orElseThrow()),
                        millis(median(of.stream().mapToDouble(Run::p50Millis).toArray())),
                        millis(median(of.stream().mapToDouble(Run::p99Millis).toArray())),
                        of.stream().mapToLong(Run::staleRefusals).sum(), of.stream().mapToLong(Run::errors).sum()));
            }
        }
        out.append("\n| workload | Fencer three peers ÷ etcd (median of rounds) | each round |\n|---|---|---|\n");
        for (String workload : WORKLOADS.keySet()) {
            Map<Integer, Double> ratios = ratios(runs, workload);
            if (ratios.isEmpty()) {
                continue;
            }
            double median = median(ratios.values().stream().mapToDouble(Double::doubleValue).toArray());
            StringBuilder each = new StringBuilder();
            ratios.forEach((round, ratio) -> each.append(each.length() == 0 ? "" : " / ").append(ratio(ratio)));
            out.append(String.format(Locale.ROOT, "| %s | %s× | %s |%n", WORKLOADS.get(workload), ratio(median),
                    each));
        }
        return out.toString();
    }

    /** Returns, per round that measured both, Fencer three peers' writes/s over etcd's. */
    static Map<Integer, Double> ratios(List<Run> runs, String workload) {
        Map<Integer, Double> fencer = new TreeMap<>();
        Map<Integer, Double> etcd = new TreeMap<>();
        for (Run run : runs) {
            if (run.workload().equals(workload) && run.system().equals("fencer3")) {
                fencer.put(run.round(), run.writesPerSecond());
            } else if (run.workload().equals(workload) && run.system().equals("etcd3")) {
                etcd.put(run.round(), run.writesPerSecond());
            }
        }
        Map<Integer, Double> ratios = new TreeMap<>();
        fencer.forEach((round, rate) -> {
            Double other = etcd.get(round);
            if (other != null && other > 0) {
                ratios.put(round, rate / other);
            }
        });
        return ratios;
    }

    /** Returns the median of {@code values}, the mean of the middle two for an even count; NaN for none. */
    static double median(double[] values) {
        if (values.length == 0) {
            return Double.NaN;
        }
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        int middle = sorted.length / 2;
        return sorted.length % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
    }

    private static double number(JsonElement element) {
        return element == null || element.isJsonNull() ? Double.NaN : element.getAsDouble();
    }

    private static String rate(double value) {
        return Double.isNaN(value) ? "—" : String.format(Locale.ROOT, "%,.0f", value);
    }

    private static String millis(double value) {
        return Double.isNaN(value) ? "—" : String.format(Locale.ROOT, "%.2f", value);
    }

    private static String ratio(double value) {
        return String.format(Locale.ROOT, "%.2f", value);
    }

    private static Map<String, String> orderedMap(String... keysAndValues) {
        Map<String, String> map = new java.util.LinkedHashMap<>();
        for (int i = 0; i < keysAndValues.length; i += 2) {
            map.put(keysAndValues[i], keysAndValues[i + 1]);
        }
        return java.util.Collections.unmodifiableMap(map);
    }
}
