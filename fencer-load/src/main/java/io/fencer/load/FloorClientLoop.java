package io.fencer.load;

import java.io.Closeable;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;

/**
 * The clients of {@link HandoffFloor} as an RPC library runs them: one I/O thread owns every connection, reads each
 * grant and wakes the client's thread, which hands its next write back to the I/O thread and wakes it. A hand-off
 * then wakes two more threads than with {@link HandoffFloor}'s own clients, which read and write their sockets
 * themselves.
 */
final class FloorClientLoop implements Closeable {
    /** A client's slot while no grant waits for its thread. */
    private static final long NO_GRANT = -1;

    private final HandoffFloor check;
    private final Selector selector;
    private final List<SocketChannel> connections = new ArrayList<>();
    private final List<Thread> threads = new ArrayList<>();
    private final Queue<Runnable> writes = new ConcurrentLinkedQueue<>();
    /** Each client's grant read by the I/O thread and not yet taken by the client's thread. */
    private final AtomicLongArray grants;
    private volatile boolean stopping;

    FloorClientLoop(int port, int clients, HandoffFloor check) throws IOException {
        this.check = check;
        this.selector = Selector.open();
        this.grants = new AtomicLongArray(clients);
        for (int i = 0; i < clients; i++) {
            grants.set(i, NO_GRANT);
            SocketChannel connection = SocketChannel.open(
                    new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
            connection.socket().setTcpNoDelay(true);
            connection.configureBlocking(false);
            connection.register(selector, SelectionKey.OP_READ, new Reading(i));
            connections.add(connection);
        }
        Thread io = new Thread(this::io, "handoff-floor-client-io");
        threads.add(io);
        for (int i = 0; i < clients; i++) {
            int client = i;
            threads.add(new Thread(() -> client(client), "handoff-floor-client-" + i));
        }
        for (Thread thread : threads) {
            thread.setDaemon(true);
            thread.start();
        }
    }

    /** What the I/O thread has read of one client's next answer. */
    private record Reading(int client, ByteBuffer answer) {
        Reading(int client) {
            this(client, ByteBuffer.allocate(FloorServer.GRANT_BYTES));
        }
    }

    private void io() {
        try {
            while (!stopping) {
                for (Runnable write; (write = writes.poll()) != null; ) {
                    write.run();
                }
                selector.select();
                for (SelectionKey key : selector.selectedKeys()) {
                    read(key);
                }
                selector.selectedKeys().clear();
            }
        } catch (IOException | RuntimeException e) {
            if (!stopping) {
                check.clientFailed(e);
            }
        }
    }

    private void read(SelectionKey key) throws IOException {
        Reading reading = (Reading) key.attachment();
        if (((SocketChannel) key.channel()).read(reading.answer()) < 0) {
            throw new IOException("the server closed the connection");
        }
        if (!reading.answer().hasRemaining()) {
            check.kind(reading.answer().get(0));
            grants.set(reading.client(), reading.answer().getLong(1));
            reading.answer().clear();
            LockSupport.unpark(threads.get(1 + reading.client()));
        }
    }

    /** Acquires, then on each grant checks its token and hands the release and next acquire to the I/O thread. */
    private void client(int client) {
        send(client, new byte[] {'A'});
        while (!stopping) {
            long token = grants.getAndSet(client, NO_GRANT);
            if (token == NO_GRANT) {
                LockSupport.park(this);
                continue;
            }
            check.granted(token);
            send(client, new byte[] {'R', 'A'});
        }
    }

    private void send(int client, byte[] requests) {
        writes.add(() -> {
            try {
                // the request is a byte or two and the server answers before asking more: it fits the socket at once
                if (connections.get(client).write(ByteBuffer.wrap(requests)) != requests.length) {
                    throw new IOException("a request did not fit the socket's buffer");
                }
            } catch (IOException e) {
                if (!stopping) {
                    check.clientFailed(e);
                }
            }
        });
        selector.wakeup();
    }

    @Override
    public void close() throws IOException {
        stopping = true;
        selector.wakeup();
        for (Thread thread : threads) {
            LockSupport.unpark(thread);
        }
        for (Thread thread : threads) {
            try {
                thread.join(HandoffFloor.CLIENT_END_WAIT.toMillis());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        for (SocketChannel connection : connections) {
            connection.close();
        }
        selector.close();
    }
}
