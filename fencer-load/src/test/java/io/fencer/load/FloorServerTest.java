package io.fencer.load;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.nio.channels.SocketChannel;
import java.io.DataInputStream;
import java.io.InputStream;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The bare lock server's wire: FIFO grants, releases by the holder only, and bad input closing one connection. */
class FloorServerTest {
    @TempDir
    Path directory;

    @Test
    void serve_releaseByTheHolder_grantsTheNextInLineWithTheNextToken() throws Exception {
        try (FloorServer server = new FloorServer(directory, true, 0);
             Client first = new Client(server); Client second = new Client(server)) {
            first.send('A');
            assertThat(first.grant()).isEqualTo(1);
            second.send('A');
            second.assertNothingArrives();

            first.send('R');

            assertThat(second.grant()).isEqualTo(2);
            assertThat(server.grants()).isEqualTo(2);
            assertThat(server.syncs()).isGreaterThanOrEqualTo(2);
        }
    }

    @Test
    void serve_releaseByAWaiter_changesNothing() throws Exception {
        try (FloorServer server = new FloorServer(directory, false, 0);
             Client first = new Client(server); Client second = new Client(server)) {
            first.send('A');
            first.grant();
            second.send('A');

            second.send('R');

            second.assertNothingArrives();
            first.send('R');
            assertThat(second.grant()).isEqualTo(2);
        }
    }

    @Test
    void serve_holderDisconnects_grantsTheNextInLine() throws Exception {
        try (FloorServer server = new FloorServer(directory, false, 2);
             Client second = new Client(server)) {
            Client first = new Client(server);
            first.send('A');
            first.grant();
            second.send('A');

            first.close();

            assertThat(second.grant()).isEqualTo(2);
        }
    }

    @Test
    void serve_requestOtherThanAcquireOrRelease_closesThatConnectionAndServesTheOthers() throws Exception {
        try (FloorServer server = new FloorServer(directory, false, 0);
             Client bad = new Client(server); Client good = new Client(server)) {
            bad.send('X');

            assertThat(bad.in.read()).as("the server closed the connection").isEqualTo(-1);
            good.send('A');
            assertThat(good.grant()).isEqualTo(1);
            assertThat(server.refused()).isEqualTo(1);
            assertThat(server.failure()).isNull();
        }
    }

    /** A blocking client of the server's wire. */
    private static final class Client implements AutoCloseable {
        private final SocketChannel channel;
        private final DataInputStream in;

        Client(FloorServer server) throws IOException {
            channel = SocketChannel.open(new InetSocketAddress(InetAddress.getLoopbackAddress(), server.port()));
            channel.socket().setSoTimeout(10_000);
            InputStream stream = channel.socket().getInputStream();
            in = new DataInputStream(stream);
        }

        void send(char request) throws IOException {
            channel.socket().getOutputStream().write(request);
        }

        long grant() throws IOException {
            assertThat(in.readByte()).isEqualTo((byte) 'G');
            return in.readLong();
        }

        void assertNothingArrives() throws IOException {
            channel.socket().setSoTimeout(200);
            try {
                int read = in.read();
                throw new AssertionError("expected nothing, read " + read);
            } catch (SocketTimeoutException expected) {
                // nothing arrived
            } finally {
                channel.socket().setSoTimeout(10_000);
            }
        }

        @Override
        public void close() throws IOException {
            channel.close();
        }
    }
}
