package io.fencer.compare;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The command line of {@link EtcdFencedWrites}, with the option names and defaults of {@code fencer bench store}.
 *
 * @param endpoints the etcd members' client URLs
 * @param settings what to run
 * @param json whether to print the summary as one JSON object
 * @param help whether to print the usage and stop
 */
record Options(List<String> endpoints, EtcdFencedWrites.Settings settings, boolean json, boolean help) {
    /** The most endpoints one run names. */
    static final int ENDPOINTS_MAX = 16;
    /** The longest warm-up or window one run accepts. */
    static final Duration DURATION_MAX = Duration.ofHours(1);

    static final String USAGE = String.join(System.lineSeparator(),
            "usage: EtcdFencedWrites --endpoints URL[,URL...] [--writers N] [--scopes N] [--value-bytes N]",
            "                        [--warmup DURATION] [--duration DURATION] [--json]",
            "  Takes an etcd lock per scope (held for the run; its key's create revision is the token), then",
            "  --writers threads write random keys with --value-bytes random values, each write one transaction",
            "  If(fence < token + 1) Then(put value, put fence = token); reports committed writes/s, latency and",
            "  stale refusals (must be 0), as `fencer bench store` does.",
            "  --endpoints    the members' client URLs, comma-separated (required), e.g. http://127.0.0.1:2379",
            "  --writers      writer threads (default: 64)",
            "  --scopes       distinct scopes; writer i writes to bench-store-<i % N> (default: one per writer)",
            "  --value-bytes  bytes per value (default: 256)",
            "  --warmup       how long to run before measuring (default: 30s); 500ms, 30s, 2m",
            "  --duration     how long to measure (default: 30s)",
            "  --json         print the summary as one JSON object, with `fencer bench store --json`'s fields");

    private static final Pattern DURATION = Pattern.compile("(\\d{1,9})(ms|s|m)");

    /** Parses {@code args}; fails naming the option and the offending value. */
    static Options parse(String[] args) {
        List<String> endpoints = new ArrayList<>();
        int writers = 64;
        Integer scopes = null;
        int valueBytes = 256;
        Duration warmup = Duration.ofSeconds(30);
        Duration duration = Duration.ofSeconds(30);
        boolean json = false;
        for (int i = 0; i < args.length; i++) {
            String name = args[i];
            switch (name) {
                case "--help", "-h" -> {
                    return new Options(List.of(), null, false, true);
                }
                case "--json" -> json = true;
                case "--endpoints" -> endpoints = endpoints(value(args, ++i, name));
                case "--writers" -> writers = integer(name, value(args, ++i, name));
                case "--scopes" -> scopes = integer(name, value(args, ++i, name));
                case "--value-bytes" -> valueBytes = integer(name, value(args, ++i, name));
                case "--warmup" -> warmup = duration(name, value(args, ++i, name));
                case "--duration" -> duration = duration(name, value(args, ++i, name));
                default -> throw new IllegalArgumentException("unknown option: " + name);
            }
        }
        if (endpoints.isEmpty()) {
            throw new IllegalArgumentException("--endpoints is required");
        }
        EtcdFencedWrites.Settings settings = new EtcdFencedWrites.Settings(writers,
                scopes == null ? writers : scopes, valueBytes, duration, warmup);
        return new Options(List.copyOf(endpoints), settings, json, false);
    }

    private static String value(String[] args, int index, String name) {
        if (index >= args.length) {
            throw new IllegalArgumentException(name + " needs a value");
        }
        return args[index];
    }

    private static List<String> endpoints(String value) {
        List<String> endpoints = new ArrayList<>();
        for (String endpoint : value.split(",", -1)) {
            if (!endpoint.matches("https?://[^\\s/]+")) {
                throw new IllegalArgumentException("--endpoints: '" + endpoint + "' is not http://HOST:PORT");
            }
            endpoints.add(endpoint);
        }
        if (endpoints.size() > ENDPOINTS_MAX) {
            throw new IllegalArgumentException("--endpoints: " + endpoints.size() + " endpoints, more than "
                    + ENDPOINTS_MAX);
        }
        return endpoints;
    }

    private static int integer(String name, String value) {
        try {
            return Integer.parseInt(value);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(name + ": '" + value + "' is not a whole number");
        }
    }

    /** Parses {@code 500ms}, {@code 30s} or {@code 2m}, up to {@link #DURATION_MAX}. */
    static Duration duration(String name, String value) {
        Matcher matcher = DURATION.matcher(value.toLowerCase(Locale.ROOT));
        if (!matcher.matches()) {
            throw new IllegalArgumentException(name + ": '" + value + "' is not a duration such as 500ms, 30s or 2m");
        }
        long amount = Long.parseLong(matcher.group(1));
        Duration duration = switch (matcher.group(2)) {
            case "ms" -> Duration.ofMillis(amount);
            case "s" -> Duration.ofSeconds(amount);
            default -> Duration.ofMinutes(amount);
        };
        if (duration.compareTo(DURATION_MAX) > 0) {
            throw new IllegalArgumentException(name + ": " + value + " is longer than " + DURATION_MAX);
        }
        return duration;
    }
}
