package io.fencer.server;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Locale;
import javax.net.SocketFactory;

/**
 * HTTP/1.1 by hand over plain sockets, for what an HTTP client library hides: the source address a connection
 * comes from (127.0.0.2 is another client as far as the server can tell), a client that sends one byte and stalls,
 * several requests on one kept-alive connection, and whether the server closed a connection. Public for the process
 * tests, which reach it through this module's test jar.
 */
public final class RawHttp {
    /** Another address of the loopback interface: a second client, as far as the server's caps can tell. */
    public static final String OTHER_ADDRESS = "127.0.0.2";

    private RawHttp() {}

    /** An answer: its status and body. */
    public record Reply(int status, String body) {}

    /** Opens a connection from {@code source} (a loopback address) to 127.0.0.1:{@code port}. */
    public static Socket connect(SocketFactory factory, String source, int port) throws IOException {
        Socket socket = factory.createSocket();
        socket.bind(new InetSocketAddress(source, 0));
        socket.connect(new InetSocketAddress("127.0.0.1", port), 10_000);
        return socket;
    }

    public static Socket connect(String source, int port) throws IOException {
        return connect(SocketFactory.getDefault(), source, port);
    }

    /** Opens a connection, sends one byte of a request and leaves it open: the slow client. */
    public static Socket oneByte(String source, int port) throws IOException {
        Socket socket = connect(source, port);
        socket.getOutputStream().write('G');
        socket.getOutputStream().flush();
        return socket;
    }

    /** Returns {@code GET path} with {@code Connection: close} or keep-alive. */
    public static String get(String path, boolean keepAlive) {
        return "GET " + path + " HTTP/1.1\r\nHost: fencer\r\n" + (keepAlive ? "" : "Connection: close\r\n") + "\r\n";
    }

    /** Returns a Connect call {@code POST /fencer.v1.<method>} with a JSON body. */
    public static String post(String method, String json, boolean keepAlive) {
        byte[] body = json.getBytes(StandardCharsets.UTF_8);
        return "POST /fencer.v1." + method + " HTTP/1.1\r\nHost: fencer\r\nContent-Type: application/json\r\n"
                + "Content-Length: " + body.length + "\r\n" + (keepAlive ? "" : "Connection: close\r\n") + "\r\n"
                + json;
    }

    /** Sends {@code request} from {@code source} on a new connection and reads its answer within {@code timeout}. */
    public static Reply call(String source, int port, String request, Duration timeout) throws IOException {
        try (Socket socket = connect(source, port)) {
            return exchange(socket, request, timeout);
        }
    }

    /** Sends {@code request} on an open connection and reads one answer (framed by its Content-Length). */
    public static Reply exchange(Socket socket, String request, Duration timeout) throws IOException {
        socket.setSoTimeout((int) timeout.toMillis());
        OutputStream out = socket.getOutputStream();
        out.write(request.getBytes(StandardCharsets.UTF_8));
        out.flush();
        InputStream in = socket.getInputStream();
        String head = readHead(in);
        int status = Integer.parseInt(head.substring(9, 12));
        int length = 0;
        for (String line : head.split("\r\n")) {
            if (line.toLowerCase(Locale.ROOT).startsWith("content-length:")) {
                length = Integer.parseInt(line.substring(15).trim());
            }
        }
        byte[] body = in.readNBytes(length);
        return new Reply(status, new String(body, StandardCharsets.UTF_8));
    }

    private static String readHead(InputStream in) throws IOException {
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        while (true) {
            int b = in.read();
            if (b < 0) {
                throw new IOException("the connection closed before an answer's head; read: " + head);
            }
            head.write(b);
            String text = head.toString(StandardCharsets.ISO_8859_1); // heads are short: reading it again is cheap
            if (text.endsWith("\r\n\r\n")) {
                return text;
            }
        }
    }

    /**
     * Returns true when the server closes {@code socket} (end of stream or a reset) within {@code timeout}, false when
     * it is still open then. Bytes the server sends before closing are read and dropped.
     */
    public static boolean closedByServer(Socket socket, Duration timeout) throws IOException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            long leftMillis = Math.max(1, (deadline - System.nanoTime()) / 1_000_000);
            socket.setSoTimeout((int) Math.min(Integer.MAX_VALUE, leftMillis));
            try {
                if (socket.getInputStream().read() < 0) {
                    return true;
                }
            } catch (SocketTimeoutException e) {
                return false;
            } catch (SocketException e) {
                return true; // reset
            }
            if (System.nanoTime() > deadline) {
                return false;
            }
        }
    }
}
