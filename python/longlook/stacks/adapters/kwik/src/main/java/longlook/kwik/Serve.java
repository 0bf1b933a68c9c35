package longlook.kwik;

import java.io.FileInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.Base64;
import java.util.List;
import java.util.Map;

import tech.kwik.core.log.NullLogger;
import tech.kwik.core.server.ServerConnectionConfig;
import tech.kwik.core.QuicConnection;
import tech.kwik.core.server.ServerConnector;
import tech.kwik.flupke.server.Http3ApplicationProtocolFactory;
import tech.kwik.flupke.server.HttpServerRequest;
import tech.kwik.flupke.server.HttpServerResponse;

/** The server: the files under --root over HTTP/3 (`page/...`, `obj/...`, `bulk/...`). */
final class Serve {
    // the windows of our endpoint and the other adapters: flow control is not what differs
    static final long STREAM_WINDOW = 6L * 1024 * 1024;
    static final long CONN_WINDOW = 15L * 1024 * 1024;

    static int run(Map<String, String> f) throws Exception {
        if (f.containsKey("qlog-dir")) {
            System.setProperty("longlook.qlog.dir", f.get("qlog-dir"));
        }
        System.setProperty("longlook.qlog.side", "server");
        Path root = Path.of(f.getOrDefault("root", "."));
        ServerConnectionConfig config = ServerConnectionConfig.builder()
                .maxIdleTimeoutInSeconds(30)
                .maxConnectionBufferSize(CONN_WINDOW)
                .maxBidirectionalStreamBufferSize(STREAM_WINDOW)
                .maxUnidirectionalStreamBufferSize(STREAM_WINDOW)
                .maxOpenPeerInitiatedBidirectionalStreams(100)
                .maxOpenPeerInitiatedUnidirectionalStreams(10)
                // "always": a Retry to every Initial that has no token of ours (the interop case)
                .retryRequired("always".equals(f.get("retry")))
                .build();
        ServerConnector connector = ServerConnector.builder()
                .withPort(Integer.parseInt(f.getOrDefault("listen-port", "4433")))
                .withKeyStore(keyStore(f.get("cert"), f.get("key")), "longlook", PASSWORD)
                .withConfiguration(config)
                // v1 and v2 (RFC 9369), as kwik serves in the interop runner: its default is v1 alone
                .withSupportedVersions(List.of(QuicConnection.QuicVersion.V1, QuicConnection.QuicVersion.V2))
                .withLogger(new NullLogger()) // the qlog comes per connection through QLogFrontEnd
                .build();
        connector.registerApplicationProtocol("h3", new Http3ApplicationProtocolFactory(
                (request, response) -> answer(root, request, response)));
        connector.start();
        System.out.println("ready");
        System.out.flush();
        return 0;
    }

    private static final char[] PASSWORD = "longlook".toCharArray();

    /** The testbed's certificate and EC key (PKCS#8 PEM) as a key store: kwik's PEM reader
     * takes RSA keys only, its key-store path takes EC ones too. */
    private static KeyStore keyStore(String certPem, String keyPem) throws Exception {
        Certificate cert;
        try (FileInputStream in = new FileInputStream(certPem)) {
            cert = CertificateFactory.getInstance("X.509").generateCertificate(in);
        }
        String pem = Files.readString(Path.of(keyPem));
        if (!pem.contains("BEGIN PRIVATE KEY")) {
            throw new IllegalArgumentException(keyPem + ": not a PKCS#8 private key (BEGIN PRIVATE KEY)");
        }
        String b64 = pem.replaceAll("-----[A-Z ]+-----", "").replaceAll("\\s", "");
        PKCS8EncodedKeySpec spec = new PKCS8EncodedKeySpec(Base64.getDecoder().decode(b64));
        String algorithm = cert.getPublicKey().getAlgorithm(); // "EC" or "RSA"
        PrivateKey key = KeyFactory.getInstance(algorithm).generatePrivate(spec);
        KeyStore ks = KeyStore.getInstance("PKCS12");
        ks.load(null, null);
        ks.setKeyEntry("longlook", key, PASSWORD, new Certificate[] {cert});
        return ks;
    }

    private static void answer(Path root, HttpServerRequest request, HttpServerResponse response) throws IOException {
        String rel = request.path().split("\\?")[0].replaceFirst("^/+", "");
        Path file = root.resolve(rel.isEmpty() ? "index.html" : rel).normalize();
        byte[] body;
        if (!file.startsWith(root.normalize()) || !Files.isRegularFile(file)) {
            response.setStatus(404);
            body = "not found\n".getBytes();
        } else {
            response.setStatus(200);
            body = Files.readAllBytes(file);
        }
        response.addHeader("content-length", Integer.toString(body.length));
        try (OutputStream out = response.getOutputStream()) {
            out.write(body);
        }
    }
}
