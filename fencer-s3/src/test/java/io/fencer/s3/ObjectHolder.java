package io.fencer.s3;

import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.Session;
import io.fencer.core.FencingToken;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * Holder A of the paused-holder scenarios, in a JVM of its own: acquires the lock with a short lease, prints
 * {@code GRANTED <sequencer>}, then obeys its standard input: {@code write-fenced} (a fenced write),
 * {@code write-fenced-held} (a fenced write that prints {@code AT-COMMIT} once it has read the fence, passed the token
 * check and created its data object, and waits for a line {@code go} before its commit), {@code check} and
 * {@code write-unfenced} (the check and the act of a check-then-act writer, see {@link StampedObject}), {@code exit}.
 */
public final class ObjectHolder {
    static final String NAME = "report.txt";

    private ObjectHolder() {}

    public static void main(String[] args) throws Exception {
        String fencerEndpoint = args[0];
        String s3Endpoint = args[1];
        String prefix = args[2];
        String lock = args[3];
        FencerClient fencer = Fencer.connect(fencerEndpoint);
        Session session = fencer.openSession(Duration.ofSeconds(4));
        Grant grant = session.lock(lock).acquire(Duration.ofSeconds(60));
        FencingToken token = grant.token();
        S3Client s3 = S3TestServer.client(s3Endpoint);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        FencedBucket bucket = FencedBucket.open(s3, S3TestServer.BUCKET, prefix, lock);
        FencedBucket held = FencedBucket.builder(s3, S3TestServer.BUCKET, prefix, lock)
                .beforeCommit(() -> holdOnce(in)).open();
        StampedObject unfenced = new StampedObject(s3, prefix + NAME);
        System.out.println("GRANTED " + token.sequencer());
        byte[] content = ("written by A under " + token).getBytes(StandardCharsets.UTF_8);
        for (String line = in.readLine(); line != null && !line.equals("exit"); line = in.readLine()) {
            switch (line) {
                case "write-fenced" -> write(bucket, token, content);
                case "write-fenced-held" -> write(held, token, content);
                case "check" -> System.out.println("CHECKED " + (unfenced.stampedToken() <= token.value()));
                case "write-unfenced" -> {
                    unfenced.put(token.value(), content);
                    System.out.println("WROTE");
                }
                default -> System.out.println("UNKNOWN " + line);
            }
        }
        System.exit(0); // the session's threads need not be waited for
    }

    private static void write(FencedBucket bucket, FencingToken token, byte[] content) {
        try {
            bucket.write(token, NAME, content);
            System.out.println("WROTE");
        } catch (StaleObjectWriteException e) {
            System.out.println("REFUSED " + e.getMessage() + " | " + e.diagnose());
        }
    }

    private static boolean held;

    /** At the first commit only: tells the test, and waits for its go (the test freezes this JVM meanwhile). */
    private static void holdOnce(BufferedReader in) {
        if (held) {
            return;
        }
        held = true;
        System.out.println("AT-COMMIT");
        try {
            String go = in.readLine();
            if (!"go".equals(go)) {
                throw new IllegalStateException("expected 'go', got " + go);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
