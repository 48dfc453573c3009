package io.fencer.server.net;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** At most one log line per identity per interval, counting those left out; a bounded set of identities. */
class RefusalLogTest {
    private static final Duration INTERVAL = Duration.ofSeconds(10);
    private final AtomicLong nanos = new AtomicLong(5_000_000_000L);

    @Test
    void admit_refusalsOfOneIdentityWithinTheInterval_logsTheFirstAndCountsTheRestOnTheNextLine() {
        RefusalLog log = new RefusalLog(nanos::get, INTERVAL, 10);

        long first = log.admit("mallory");
        long second = log.admit("mallory");
        long third = log.admit("mallory");
        long otherIdentity = log.admit("alice");
        advance(INTERVAL.minusMillis(1));
        long stillInside = log.admit("mallory");
        advance(Duration.ofMillis(1));
        long next = log.admit("mallory");
        advance(INTERVAL);
        long quiet = log.admit("mallory");

        assertThat(first).isZero();
        assertThat(second).isEqualTo(-1);
        assertThat(third).isEqualTo(-1);
        assertThat(otherIdentity).as("each identity has its own interval").isZero();
        assertThat(stillInside).isEqualTo(-1);
        assertThat(next).as("the three left out").isEqualTo(3);
        assertThat(quiet).isZero();
    }

    @Test
    void admit_moreIdentitiesThanTheBound_forgetsQuietOnesOrSharesOneLine() {
        RefusalLog log = new RefusalLog(nanos::get, INTERVAL, 2);
        log.admit("a");
        log.admit("b");

        long beyondBound = log.admit("c");
        long beyondBoundAgain = log.admit("d");
        advance(INTERVAL);
        long afterQuiet = log.admit("e");

        assertThat(beyondBound).as("c gets the shared line").isZero();
        assertThat(beyondBoundAgain).as("d shares c's interval").isEqualTo(-1);
        assertThat(afterQuiet).as("a and b were quiet for an interval: forgotten, e fits").isZero();
        assertThat(log.identitiesRemembered()).isLessThanOrEqualTo(3);
    }

    private void advance(Duration duration) {
        nanos.addAndGet(duration.toNanos());
    }
}
