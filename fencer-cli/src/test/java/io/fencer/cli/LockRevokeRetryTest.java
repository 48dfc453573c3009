package io.fencer.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.fencer.client.Fencer;
import io.fencer.client.FencerClient;
import io.fencer.client.Grant;
import io.fencer.client.Revocation;
import io.fencer.client.Session;
import io.fencer.client.TokenStatus;
import io.fencer.core.FencingToken;
import io.fencer.core.NotHolderException;
import io.fencer.testing.FencerTestServer;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.time.Duration;
import org.assertj.core.api.Assertions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A revoke whose answer is lost after the server committed it (a proxy in front of a real server drops the first
 * Revoke's reply) is retried; the retry's NOT_HOLDER is reported as "already ended", exit 0, not as "the lock is
 * free". A refusal of the first attempt stays NOT_HOLDER.
 */
class LockRevokeRetryTest {
    private static final Duration GENEROUS = Duration.ofSeconds(60);

    @TempDir
    static Path dataDir;
    private static FencerTestServer server;
    private static FencerClient fencer;

    @BeforeAll
    static void startServer() throws Exception {
        server = FencerTestServer.builder(dataDir).start();
        fencer = Fencer.connect(server.endpoint());
        // Revoke is a command of format level 5, which the leader sets once it leads.
        await().atMost(GENEROUS).ignoreExceptions().until(() -> fencer.status().groupFormatLevel() == 5);
    }

    @AfterAll
    static void stopServer() {
        if (fencer != null) {
            fencer.close();
        }
        if (server != null) {
            server.close();
        }
    }

    @Test
    void lockRevoke_firstReplyLost_retrySaysAlreadyEndedAndExitsZero() throws Exception {
        try (Session holder = fencer.openSession(Duration.ofSeconds(30))) {
            Grant grant = holder.lock("retry/a").acquire(GENEROUS);
            StringWriter out = new StringWriter();
            StringWriter err = new StringWriter();
            int exit;
            try (RevokeReplyLosingProxy proxy = new RevokeReplyLosingProxy(server.endpoint())) {
                exit = Main.execute(new Main(), new PrintWriter(out, true), new PrintWriter(err, true),
                        "lock", "revoke", "retry/a", "--json", "--server", proxy.endpoint());
                assertThat(proxy.repliesLost).as("the control: the first attempt's answer was lost").hasValue(1);
            }

            assertThat(exit).as("stderr: %s", err).isEqualTo(Main.EXIT_OK);
            assertThat(fencer.validate(grant.token()).status()).as("the first attempt ended the grant")
                    .isNotEqualTo(TokenStatus.Status.CURRENT);
            JsonObject answer = JsonParser.parseString(out.toString().strip()).getAsJsonObject();
            assertThat(answer.get("alreadyEnded").getAsBoolean()).isTrue();
            assertThat(answer.get("revokedToken").getAsLong()).isEqualTo(grant.token().value());
            assertThat(answer.get("next").isJsonNull()).as("nobody waited: the lock is free").isTrue();
        }
    }

    @Test
    void lockRevoke_firstReplyLost_textSaysPerhapsTheFirstAttemptAndPointsToWatch() throws Exception {
        try (Session holder = fencer.openSession(Duration.ofSeconds(30))) {
            Grant grant = holder.lock("retry/b").acquire(GENEROUS);
            StringWriter out = new StringWriter();
            int exit;
            try (RevokeReplyLosingProxy proxy = new RevokeReplyLosingProxy(server.endpoint())) {
                exit = Main.execute(new Main(), new PrintWriter(out, true), new PrintWriter(new StringWriter(), true),
                        "lock", "revoke", "retry/b", "--server", proxy.endpoint());
                assertThat(proxy.repliesLost).as("the control: the first attempt's answer was lost").hasValue(1);
            }

            assertThat(exit).isEqualTo(Main.EXIT_OK);
            assertThat(out.toString()).contains("the grant " + grant.token() + " was already ended (perhaps by this"
                    + " call's first attempt, whose reply was lost); see `fencer lock watch retry/b`")
                    .contains("the lock is free now").doesNotContain("is not the holder");
        }
    }

    @Test
    void revoke_ofAReleasedGrantOnTheFirstAttempt_isNotHolder() throws Exception {
        try (Session holder = fencer.openSession(Duration.ofSeconds(30))) {
            Grant grant = holder.lock("retry/c").acquire(GENEROUS);
            grant.close();

            Assertions.assertThatThrownBy(() -> fencer.revoke(grant.token()))
                    .as("a refusal of the first attempt is the caller's").isInstanceOf(NotHolderException.class)
                    .hasMessageContaining("the lock is free");
        }
    }

    @Test
    void revoke_firstReplyLostWithAWaiter_returnsAlreadyEndedNamingTheLaterHolder() throws Exception {
        try (Session holder = fencer.openSession(Duration.ofSeconds(30));
                Session waiter = fencer.openSession(Duration.ofSeconds(30))) {
            FencingToken held = holder.lock("retry/d").acquire(GENEROUS).token();
            var waiting = java.util.concurrent.CompletableFuture.supplyAsync(
                    () -> waiter.lock("retry/d").acquire(GENEROUS));
            await().atMost(GENEROUS).until(() -> fencer.describe("retry/d").waiterSessionIds().contains(waiter.id()));
            Revocation revocation;
            try (RevokeReplyLosingProxy proxy = new RevokeReplyLosingProxy(server.endpoint());
                    FencerClient viaProxy = Fencer.connect(proxy.endpoint())) {
                revocation = viaProxy.revoke(held);
                assertThat(proxy.repliesLost).as("the control: the first attempt's answer was lost").hasValue(1);
            }

            FencingToken next = waiting.get().token();
            assertThat(revocation.alreadyEnded()).as("the retry found the grant ended").isTrue();
            assertThat(revocation.revoked()).isEqualTo(held);
            assertThat(revocation.next()).isEqualTo(next);
            assertThat(next.value()).isGreaterThan(held.value());
        }
    }
}
