package io.fencer.cli;

import io.fencer.cli.exec.StopSignals;
import io.fencer.client.LockTimeoutException;
import io.fencer.core.FencerException;
import io.fencer.core.InvalidArgumentException;
import io.fencer.core.PermissionDeniedException;
import io.fencer.core.StaleTokenException;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.nio.file.AccessDeniedException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.concurrent.CompletionStage;
import java.util.function.Supplier;
import java.util.logging.Level;
import java.util.logging.Logger;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.IVersionProvider;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.ParseResult;
import picocli.CommandLine.ScopeType;
import picocli.CommandLine.Spec;
import picocli.CommandLine.UnmatchedArgumentException;

/**
 * The {@code fencer} command: runs a server, takes locks from the shell, shows lock state and measures a group.
 *
 * <p>Exit codes: 0 ok; 1 error; 2 usage error; 3 lease lost while holding; 4 lock not acquired in time; 5 stale token
 * (a resource refused the token: it has accepted a newer one); 6 permission denied (the server's ACL grants this
 * identity no such permission on that name); 7 the chaos checker found violations. Errors print
 * one line {@code fencer: <message>} on stderr, with a stack trace only under {@code --verbose}.
 */
// The subcommands are listed in CommandTree, which builds in full only those that a command line names.
@Command(name = "fencer", mixinStandardHelpOptions = true, versionProvider = Main.Version.class,
        description = "Fencer: a lock service that issues fencing tokens.",
        exitCodeListHeading = "%nExit codes:%n",
        exitCodeList = {"0:ok", "1:error", "2:usage error", "3:lease lost while holding the lock",
            "4:lock not acquired within --wait", "5:stale token: the resource has accepted a newer token",
            "6:permission denied: the server's ACL refuses this identity", "7:chaos: the checker found violations",
            "8:server --join: the group did not add this peer"})
public final class Main implements Runnable {
    static final int EXIT_OK = 0;
    static final int EXIT_ERROR = 1;
    static final int EXIT_USAGE = 2;
    static final int EXIT_LEASE_LOST = 3;
    static final int EXIT_NOT_ACQUIRED = 4;
    static final int EXIT_STALE = 5;
    static final int EXIT_PERMISSION_DENIED = 6;
    static final int EXIT_VIOLATIONS = 7;
    static final int EXIT_NOT_JOINED = 8;

    /** The defaults {@link #configureNetty} sets; the prefix is that of the Netty shaded into grpc-netty-shaded. */
    static final Map<String, String> NETTY_DEFAULTS = Map.of(
            "io.grpc.netty.shaded.io.netty.leakDetection.level", "disabled",
            "io.grpc.netty.shaded.io.netty.recycler.maxCapacityPerThread", "0",
            "io.grpc.netty.shaded.io.netty.jfr.enabled", "false");
    /**
     * The options whose value a server checks again against a range of its own, by the field its refusal names: the
     * server may be set narrower than the command's range.
     */
    private static final Map<String, String> OPTIONS_BY_FIELD = Map.of("ttl_millis", "--ttl");
    /** The deepest cause chain {@link #hint} looks through; gRPC wraps a transport's error a few levels down. */
    private static final int CAUSE_DEPTH_MAX = 8;
    private static final String JUL_FORMAT_PROPERTY = "java.util.logging.SimpleFormatter.format";
    /** gRPC and Netty log through java.util.logging; held here because JUL keeps loggers only weakly. */
    private static final List<Logger> QUIETED_LOGGERS = new ArrayList<>();

    @Option(names = "--verbose", scope = ScopeType.INHERIT, description = "Print stack traces with errors.")
    boolean verbose;

    @Spec
    CommandSpec spec;

    private final Supplier<CompletionStage<String>> stopSignals;

    /** Creates the command as run from a shell: SIGINT and SIGTERM ask commands that hold locks to stop. */
    public Main() {
        this(StopSignals::install);
    }

    /** Creates the command with another source of stop requests (tests complete the stage themselves). */
    Main(Supplier<CompletionStage<String>> stopSignals) {
        this.stopSignals = Objects.requireNonNull(stopSignals, "stopSignals");
    }

    /** Runs the command and exits the JVM with its exit code. */
    public static void main(String[] args) {
        configureNetty(System.getProperties());
        // Before the first logger: slf4j-simple and java.util.logging format their timestamps in the default format
        // locale, which wrote the year 2569 in a Thai locale (its Buddhist calendar) and Arabic-Indic digits in an
        // Arabic one. A log is read by tools as much as by people; the command's own output already uses the root
        // locale, and its messages are in English whatever the locale.
        Locale.setDefault(Locale.Category.FORMAT, Locale.ROOT);
        String locale = ConsoleCharset.nativeEncoding();
        int undecoded = ConsoleCharset.undecodedArgument(args);
        if (undecoded >= 0) {
            System.err.println(ConsoleCharset.undecodedMessage(undecoded, args.length, locale));
            System.exit(EXIT_USAGE);
        }
        boolean utf8Output = ConsoleCharset.asciiLocale(locale);
        if (utf8Output) {
            ConsoleCharset.useUtf8ForStandardStreams(); // before any logger takes System.err
        }
        configureJavaUtilLogging();
        CommandLine commandLine = newCommandLineFor(new Main(), args);
        if (utf8Output) {
            commandLine.setOut(ConsoleCharset.utf8Writer(System.out));
            commandLine.setErr(ConsoleCharset.utf8Writer(System.err));
        }
        System.exit(commandLine.execute(args));
    }

    /**
     * Sets the distribution's defaults for gRPC's Netty, unless the user set them ({@code -D} wins): no leak
     * detection and no object recycler. Both cost CPU on every call: leak detection records a sample of buffers
     * (a debugging aid), and the recycler hands buffers and promises back to the thread that made them through
     * queues, which with many calling threads cost more than allocating anew. Measured on the lock bench: see
     * docs/performance.md. Nor Flight Recorder events for buffer allocations: with them on, the first buffer
     * initialises the JVM's event metadata, about 50 ms of CPU at every start of a short command (docs/cli.md).
     * Must run before the first Netty class loads, hence first in {@link #main}.
     */
    static void configureNetty(Properties properties) {
        NETTY_DEFAULTS.forEach(properties::putIfAbsent);
    }

    /**
     * Makes the client's java.util.logging records one line each, like slf4j-simple's, and quiets gRPC and Netty
     * internals to warnings. The format must be set before the first handler is created, hence before any log.
     */
    private static void configureJavaUtilLogging() {
        if (System.getProperty(JUL_FORMAT_PROPERTY) == null) {
            System.setProperty(JUL_FORMAT_PROPERTY, "%1$tFT%1$tT.%1$tL%1$tz [%4$s] %3$s - %5$s%6$s%n");
        }
        for (String name : List.of("io.grpc", "org.apache.ratis.thirdparty", "io.netty")) {
            Logger logger = Logger.getLogger(name);
            logger.setLevel(Level.WARNING);
            QUIETED_LOGGERS.add(logger);
        }
        // A host name that does not resolve makes gRPC log a warning with a stack trace per attempt; the command
        // reports it in one line of its own ("unknown host"), so those warnings say nothing more.
        Logger channels = Logger.getLogger("io.grpc.internal.ManagedChannelImpl");
        channels.setLevel(Level.SEVERE);
        QUIETED_LOGGERS.add(channels);
    }

    /** Runs {@code args} in process, writing to {@code out} and {@code err}; returns the exit code. */
    static int execute(Main main, PrintWriter out, PrintWriter err, String... args) {
        CommandLine commandLine = newCommandLineFor(main, args);
        commandLine.setOut(out);
        commandLine.setErr(err);
        try {
            return commandLine.execute(args);
        } finally {
            out.flush();
            err.flush();
        }
    }

    /**
     * Returns the picocli command line of {@code main} with every subcommand built in full, with fencer's error
     * handling and exit codes.
     */
    static CommandLine newCommandLine(Main main) {
        return withHandlers(CommandTree.whole(main));
    }

    /**
     * Returns the command line that runs {@code args}: like {@link #newCommandLine(Main)}, but only the commands that
     * {@code args} name are built in full (see {@link CommandTree}), which saves most of picocli's start-up.
     */
    static CommandLine newCommandLineFor(Main main, String... args) {
        return withHandlers(CommandTree.along(main, args));
    }

    private static CommandLine withHandlers(CommandLine commandLine) {
        commandLine.setExecutionExceptionHandler(Main::handleExecutionException);
        commandLine.setParameterExceptionHandler(Main::handleParameterException);
        return commandLine;
    }

    /** Starts a wait for the user's stop request (SIGINT, SIGTERM); the stage completes with the signal's name. */
    CompletionStage<String> stopSignals() {
        return stopSignals.get();
    }

    @Override
    public void run() {
        throw new ParameterException(spec.commandLine(),
                "Missing command: choose server, store-server, lock, kv, peers, bench, demo or chaos");
    }

    private static int handleParameterException(ParameterException exception, String[] args) {
        CommandLine commandLine = exception.getCommandLine();
        PrintWriter err = commandLine.getErr();
        err.println("fencer: " + exception.getMessage());
        UnmatchedArgumentException.printSuggestions(exception, err);
        err.println("Try '" + commandLine.getCommandSpec().qualifiedName() + " --help' for more information.");
        err.flush();
        return EXIT_USAGE;
    }

    private static int handleExecutionException(Exception exception, CommandLine commandLine, ParseResult parsed) {
        PrintWriter err = commandLine.getErr();
        String refusedOption = refusedOption(exception, commandLine);
        if (refusedOption != null) {
            err.println("fencer: " + refusedOption);
            err.flush();
            return EXIT_USAGE;
        }
        err.println("fencer: " + message(exception) + hint(exception));
        if (root(commandLine).verbose) {
            exception.printStackTrace(err);
        }
        err.flush();
        if (exception instanceof LockTimeoutException) {
            return ExecExitCodes.notAcquired(commandLine);
        }
        if (exception instanceof StaleTokenException) {
            return EXIT_STALE;
        }
        if (exception instanceof PermissionDeniedException) {
            return EXIT_PERMISSION_DENIED;
        }
        return EXIT_ERROR;
    }

    /**
     * Returns the sentence of a server's refusal of an option's value, or null when {@code exception} is none: a
     * value within the command's own range that the server's narrower one refuses (a {@code --ttl} longer than its
     * longest session ttl). Like a value the command refuses itself, it is the user's to change: a usage error
     * naming the option and the value as given, with the server's own sentence, which names its range.
     */
    static String refusedOption(Exception exception, CommandLine commandLine) {
        if (!(exception instanceof InvalidArgumentException invalid)) {
            return null;
        }
        String name = invalid.field() == null ? null : OPTIONS_BY_FIELD.get(invalid.field());
        OptionSpec option = name == null ? null : commandLine.getCommandSpec().findOption(name);
        if (option == null) {
            return null;
        }
        List<String> given = option.originalStringValues();
        String value = given.isEmpty() ? option.defaultValue() : given.get(given.size() - 1);
        return name + " " + value + " is refused by the server: " + invalid.getMessage() + " (the server's range); "
                + "give a " + name + " within it";
    }

    /** Returns the sentence to show for {@code exception}: catalogue errors carry their own; others get their type. */
    static String message(Throwable exception) {
        if (exception instanceof FileSystemException file && file.getReason() == null) {
            return file.getMessage() + ": " + fileProblem(file);
        }
        String message = exception.getMessage();
        if (exception instanceof FencerException || exception instanceof LockTimeoutException
                || exception instanceof IOException) {
            return message != null ? message : exception.getClass().getSimpleName();
        }
        if (exception instanceof InterruptedException) {
            return "interrupted";
        }
        return message != null ? message : exception.getClass().getName();
    }

    /**
     * Returns what is wrong with the file of {@code exception}: the JDK's NoSuchFileException and its kin carry the
     * path alone as their message, which left the operator guessing.
     */
    private static String fileProblem(FileSystemException exception) {
        if (exception instanceof NoSuchFileException) {
            return "no such file or directory";
        }
        if (exception instanceof AccessDeniedException) {
            return "permission denied";
        }
        if (exception instanceof FileAlreadyExistsException) {
            return "already exists";
        }
        if (exception instanceof NotDirectoryException) {
            return "not a directory";
        }
        if (exception instanceof DirectoryNotEmptyException) {
            return "directory not empty";
        }
        return exception.getClass().getSimpleName();
    }

    /**
     * Returns what to add to the message of a command that reached no server: the likely cause and its remedy.
     * A refused connection or an unknown host is what a first run without a server looks like.
     */
    static String hint(Throwable exception) {
        Throwable cause = exception;
        for (int depth = 0; cause != null && depth < CAUSE_DEPTH_MAX; depth++) {
            if (cause instanceof java.net.UnknownHostException) {
                return "; check the host name";
            }
            if (cause instanceof java.net.ConnectException) {
                return "; is a server running? start one with ./fencer server";
            }
            cause = cause.getCause();
        }
        return "";
    }

    private static Main root(CommandLine commandLine) {
        CommandLine root = commandLine;
        while (root.getParent() != null) {
            root = root.getParent();
        }
        return (Main) root.getCommand();
    }

    /** Reads the version that the build wrote into {@code version.properties}. */
    static final class Version implements IVersionProvider {
        @Override
        public String[] getVersion() throws IOException {
            Properties properties = new Properties();
            try (InputStream in = Main.class.getResourceAsStream("version.properties")) {
                if (in != null) {
                    properties.load(in);
                }
            }
            return new String[] {"fencer " + properties.getProperty("version", "(development build)"),
                "Java " + Runtime.version() + " (" + System.getProperty("java.vm.name") + ")"};
        }
    }
}
