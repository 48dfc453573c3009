package io.fencer.server.net;

import static org.assertj.core.api.Assertions.assertThat;

import io.fencer.core.Ticker;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * An {@link HttpPort} with a handler of the test's own: what the port guarantees every handler (one request at a
 * time per connection, in order; bodies within their bounds; 100-continue in turn; unreadable requests answered).
 */
class HttpPortBehaviourTest {
    private static final int BODY_MAX = 1_024;
    private static final Duration WAIT = Duration.ofSeconds(20);
    private final BlockingQueue<HttpCall> calls = new LinkedBlockingQueue<>();
    private HttpPort port;

    private HttpPort start(long bodiesBytesMax) throws IOException {
        port = HttpPort.start("127.0.0.1", 0, null, PortLimits.DEFAULT,
                new HttpPort.Settings("test", BODY_MAX, bodiesBytesMax, 4 * BODY_MAX, 2),
                new ConnectionCaps("test", "http", 64, 64, true, new SimpleMeterRegistry(), Ticker.system()),
                calls::add);
        return port;
    }

    @AfterEach
    void stop() {
        if (port != null) {
            port.close();
        }
    }

    private HttpCall nextCall() throws InterruptedException {
        HttpCall call = calls.poll(WAIT.toSeconds(), TimeUnit.SECONDS);
        assertThat(call).as("a call reached the handler").isNotNull();
        return call;
    }

    private static String post(String path, int bodyBytes, String extraHeaders) {
        return "POST " + path + " HTTP/1.1\r\nHost: t\r\nContent-Length: " + bodyBytes + "\r\n" + extraHeaders + "\r\n"
                + "x".repeat(bodyBytes);
    }

    private static void send(Socket socket, String text) throws IOException {
        socket.getOutputStream().write(text.getBytes(StandardCharsets.US_ASCII));
        socket.getOutputStream().flush();
    }

    /** Reads what the server sent until {@code expected} appears (or the connection ends), within the wait. */
    private static String readUntil(Socket socket, String expected) throws IOException {
        socket.setSoTimeout((int) WAIT.toMillis());
        InputStream in = socket.getInputStream();
        ByteArrayOutputStream read = new ByteArrayOutputStream();
        while (!read.toString(StandardCharsets.US_ASCII).contains(expected)) {
            int b = in.read();
            if (b < 0) {
                break;
            }
            read.write(b);
        }
        return read.toString(StandardCharsets.US_ASCII);
    }

    @Test
    void pipelinedRequests_areHandedOnOneAtATimeAndAnsweredInOrder() throws Exception {
        start(64 * BODY_MAX);
        try (Socket socket = new Socket("127.0.0.1", port.port())) {
            send(socket, post("/first", 3, "") + post("/second", 4, ""));

            HttpCall first = nextCall();
            HttpCall notYet = calls.poll(300, TimeUnit.MILLISECONDS);
            new Thread(() -> first.answer(200, "text/plain", "one".getBytes(StandardCharsets.US_ASCII))).start();
            HttpCall second = nextCall();
            second.answer(200, "text/plain", "two".getBytes(StandardCharsets.US_ASCII));
            String answers = readUntil(socket, "two");

            assertThat(first.path()).isEqualTo("/first");
            assertThat(first.body()).hasSize(3);
            assertThat(notYet).as("the second waits until the first is answered").isNull();
            assertThat(second.path()).isEqualTo("/second");
            assertThat(second.body()).hasSize(4);
            assertThat(answers.indexOf("one")).isPositive().isLessThan(answers.indexOf("two"));
        }
    }

    @Test
    void expectContinue_isAnsweredWhenTheRequestsTurnComes() throws Exception {
        start(64 * BODY_MAX);
        try (Socket socket = new Socket("127.0.0.1", port.port())) {
            send(socket, "POST /c HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
            String interim = readUntil(socket, "\r\n\r\n");
            send(socket, "hello");
            HttpCall call = nextCall();
            call.answer(204, "text/plain", new byte[0]);

            assertThat(interim).startsWith("HTTP/1.1 100 Continue");
            assertThat(new String(call.body(), StandardCharsets.US_ASCII)).isEqualTo("hello");
            assertThat(readUntil(socket, "\r\n\r\n")).startsWith("HTTP/1.1 204");
        }
    }

    @Test
    void bodyOverTheRequestLimit_reachesTheHandlerAsAnOverflowWithItsSize() throws Exception {
        start(64 * BODY_MAX);
        try (Socket socket = new Socket("127.0.0.1", port.port())) {
            send(socket, post("/big", BODY_MAX + 100, ""));
            HttpCall call = nextCall();

            assertThat(call.overflow()).isEqualTo(HttpCall.Overflow.REQUEST_BODY);
            assertThat(call.body()).isEmpty();
            assertThat(call.bodyBytesRead()).isEqualTo(BODY_MAX + 100);
        }
    }

    @Test
    void bodiesOverThePortsBudget_reachTheHandlerAsAnOverflowUntilOthersAreAnswered() throws Exception {
        start(2L * BODY_MAX);
        try (Socket one = new Socket("127.0.0.1", port.port()); Socket two = new Socket("127.0.0.1", port.port());
                Socket three = new Socket("127.0.0.1", port.port())) {
            send(one, post("/one", BODY_MAX, ""));
            HttpCall first = nextCall();
            send(two, post("/two", BODY_MAX, ""));
            HttpCall second = nextCall();
            send(three, post("/three", 10, ""));
            HttpCall third = nextCall();
            first.answer(200, "text/plain", new byte[0]);
            readUntil(one, "\r\n\r\n");
            send(three, post("/three-again", 10, ""));
            third.answer(200, "text/plain", new byte[0]);
            HttpCall again = nextCall();

            assertThat(first.overflow()).isEqualTo(HttpCall.Overflow.NONE);
            assertThat(second.overflow()).isEqualTo(HttpCall.Overflow.NONE);
            assertThat(third.overflow()).as("the budget is held by the two unanswered calls")
                    .isEqualTo(HttpCall.Overflow.PORT_BODIES);
            assertThat(again.overflow()).as("the first call's answer gave its bytes back")
                    .isEqualTo(HttpCall.Overflow.NONE);
        }
    }

    @Test
    void requestLineTooLong_isAnswered414AndClosed() throws Exception {
        start(64 * BODY_MAX);
        try (Socket socket = new Socket("127.0.0.1", port.port())) {
            send(socket, "GET /" + "a".repeat(HttpPort.REQUEST_LINE_BYTES_MAX + 10) + " HTTP/1.1\r\nHost: t\r\n\r\n");

            String answer = readUntil(socket, "\u0000never");

            assertThat(answer).startsWith("HTTP/1.1 414");
            assertThat(calls).isEmpty();
        }
    }

    @Test
    void clientClosingDuringItsCall_tellsTheCall() throws Exception {
        start(64 * BODY_MAX);
        CountDownLatch told = new CountDownLatch(1);
        try (Socket socket = new Socket("127.0.0.1", port.port())) {
            send(socket, post("/wait", 1, ""));
            nextCall().onClose(told::countDown);
        }

        assertThat(told.await(WAIT.toSeconds(), TimeUnit.SECONDS)).isTrue();
    }
}
