package io.fencer.client.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

class RequestIdsTest {
    @Test
    void next_manyCallsOfTwoClients_areAllDistinctAndWithinTheServersLimit() {
        RequestIds first = new RequestIds();
        RequestIds second = new RequestIds();
        Set<String> seen = new HashSet<>();

        for (int i = 0; i < 10_000; i++) {
            for (String id : new String[] {first.next(), second.next()}) {
                assertThat(seen.add(id)).as(id).isTrue();
                assertThat(id.getBytes(StandardCharsets.UTF_8).length).isLessThanOrEqualTo(36);
            }
        }
    }
}
