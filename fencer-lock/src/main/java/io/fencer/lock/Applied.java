package io.fencer.lock;

import java.util.List;

/** What applying one command produced: the result for its proposer and the events for the server. */
public record Applied(Result result, List<Event> events) {
    public Applied {
        events = List.copyOf(events);
    }
}
