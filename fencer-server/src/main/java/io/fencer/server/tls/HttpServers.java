package io.fencer.server.tls;

import com.sun.net.httpserver.HttpServer;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsParameters;
import com.sun.net.httpserver.HttpsServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;

/** The one way the server's JDK HTTP ports (admin, Connect) are bound: HTTPS with the server's TLS, or plaintext. */
public final class HttpServers {
    private HttpServers() {}

    /**
     * Binds an HTTP server on {@code address}: HTTPS with {@code tls}'s context and server parameters (client
     * certificates as the client port requires them), or plaintext when {@code tls} is null. Not started.
     *
     * @throws IOException when the address cannot be bound
     */
    public static HttpServer bind(InetSocketAddress address, int backlog, TlsMaterial tls) throws IOException {
        if (tls == null) {
            return HttpServer.create(address, backlog);
        }
        HttpsServer server = HttpsServer.create(address, backlog);
        SSLContext context = tls.sslContext();
        SSLParameters parameters = tls.serverParameters(context);
        server.setHttpsConfigurator(new HttpsConfigurator(context) {
            @Override
            public void configure(HttpsParameters connection) {
                connection.setSSLParameters(parameters);
            }
        });
        return server;
    }
}
