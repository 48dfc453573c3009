package io.fencer.files;

import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.Session;
import io.fencer.core.FencingToken;
import io.fencer.core.StaleTokenException;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

/**
 * Holder A of the paused-holder scenario, in a JVM of its own: acquires the lock with a short lease, prints
 * {@code GRANTED <sequencer>}, then obeys its standard input: {@code check} (the check of a check-then-act writer:
 * is the accepted token still at most mine?), {@code write-fenced} (a fenced write), {@code write-unfenced} (the act
 * of a check-then-act writer: a plain replace), {@code exit}.
 */
public final class FileHolder {
    static final String FILE = "report.txt";

    private FileHolder() {}

    public static void main(String[] args) throws Exception {
        String endpoint = args[0];
        Path dir = Path.of(args[1]);
        String lock = args[2];
        FencerClient fencer = Fencer.connect(endpoint);
        Session session = fencer.openSession(Duration.ofSeconds(4));
        Grant grant = session.lock(lock).acquire(Duration.ofSeconds(60));
        FencingToken token = grant.token();
        FencedDirectory files = FencedDirectory.open(dir, lock);
        System.out.println("GRANTED " + token.sequencer());
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        byte[] content = ("written by A under " + token).getBytes(StandardCharsets.UTF_8);
        for (String line = in.readLine(); line != null && !line.equals("exit"); line = in.readLine()) {
            switch (line) {
                case "check" -> System.out.println("CHECKED " + (files.accepted() <= token.value()));
                case "write-fenced" -> {
                    try {
                        files.write(token, FILE, content);
                        System.out.println("WROTE");
                    } catch (StaleTokenException e) {
                        System.out.println("REFUSED " + e.getMessage());
                    }
                }
                case "write-unfenced" -> {
                    Files.write(dir.resolve(FILE), content);
                    System.out.println("WROTE");
                }
                default -> System.out.println("UNKNOWN " + line);
            }
        }
        System.exit(0); // the session's threads need not be waited for
    }
}
