package longlook.kwik;

import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import tech.kwik.agent15.TlsConstants;
import tech.kwik.core.QuicClientConnection;
import tech.kwik.core.QuicConnection;
import tech.kwik.core.QuicSessionTicket;
import tech.kwik.core.impl.QuicClientConnectionImpl;
import tech.kwik.core.log.NullLogger;
import tech.kwik.core.log.QLog;
import tech.kwik.flupke.impl.Http3ClientConnectionImpl;
import tech.kwik.qlog.QLogFrontEnd;

/**
 * The client: one page load (the HTML, then every {@code src="..."} in it at once) or one bulk
 * download, written as the fetch JSON of `endpoint fetch` (docs/interfaces.md). The QUIC
 * connection is built here (not by flupke's HttpClient) so that it can be closed at the end:
 * the server then ends its connection and its log at once.
 */
final class Fetch {
    private static final Pattern SRC = Pattern.compile("src=\"([^\"]+)\"");

    /** kwik's client asks its logger for the qlog: one per connection. */
    static final class QlogLogger extends NullLogger {
        final QLogFrontEnd qlog;

        QlogLogger() {
            byte[] id = new byte[8];
            new SecureRandom().nextBytes(id);
            qlog = new QLogFrontEnd(id);
        }

        @Override
        public QLog getQLog() {
            return qlog;
        }
    }

    static final class Transfer {
        String path;
        Integer status;
        long bytes;
        double startMs;
        Double firstByteMs;
        Double endMs;
        byte[] body;
        final List<double[]> goodput = new ArrayList<>();
    }

    private static long t0;

    private static double ms() {
        return (System.nanoTime() - t0) / 1e6;
    }

    static int run(Map<String, String> f) {
        if (f.containsKey("qlog-dir")) {
            System.setProperty("longlook.qlog.dir", f.get("qlog-dir"));
        }
        System.setProperty("longlook.qlog.side", "client");
        String url = f.getOrDefault("url", "");
        String mode = f.getOrDefault("mode", "page");
        Json doc = new Json();
        doc.put("run_id", f.getOrDefault("run-id", "")).put("url", url).put("mode", mode)
                .put("protocol_requested", "h3").put("protocol", null).put("ok", false).put("error", null)
                .put("zero_rtt", new Json().put("attempted", false).put("accepted", false))
                .put("stopped_early", false);
        int code;
        try {
            code = fetch(f, url, mode, doc);
        } catch (Exception e) {
            doc.put("error", String.valueOf(e));
            code = 1;
        }
        try {
            if (f.containsKey("out")) {
                Files.writeString(Path.of(f.get("out")), doc.toString());
            } else {
                System.out.println(doc);
            }
        } catch (Exception e) {
            System.err.println("fetch: " + e);
            return 1;
        }
        return code;
    }

    private static int fetch(Map<String, String> f, String url, String mode, Json doc) throws Exception {
        URI uri = URI.create(url);
        double timeoutS = Double.parseDouble(f.getOrDefault("timeout-s", "60"));
        QlogLogger logger = new QlogLogger();
        QuicClientConnection.Builder builder = QuicClientConnection.newBuilder()
                .uri(uri)
                .applicationProtocol("h3")
                // kwik matches the server's name against DNS names only, and the testbed's
                // certificate names 198.18.2.2 as an IP address: this client does not verify
                // (as the quiche and tquic clients); --ca is accepted and unused
                .noServerCertificateCheck()
                .logger(logger)
                .connectTimeout(Duration.ofMillis((long) (timeoutS * 1000)))
                .maxIdleTimeout(Duration.ofSeconds(30))
                .defaultStreamReceiveBufferSize(Serve.STREAM_WINDOW);
        if (f.containsKey("keylog")) {
            builder.secrets(Path.of(f.get("keylog"))); // NSS key log format (Wireshark)
        }
        // the interop cases this client can be asked for (the adapter's case_calls)
        Path ticketFile = f.containsKey("ticket-file") ? Path.of(f.get("ticket-file")) : null;
        if (ticketFile != null && Files.exists(ticketFile)) { // a first connection's ticket: resume
            builder.sessionTicket(Files.readAllBytes(ticketFile));
        }
        if ("chacha20".equals(f.get("cipher"))) { // offered alone
            builder.cipherSuite(TlsConstants.CipherSuite.TLS_CHACHA20_POLY1305_SHA256);
        }
        if ("v2".equals(f.get("version"))) { // compatible negotiation: a v1 Initial preferring v2
            builder.initialVersion(QuicConnection.QuicVersion.V1).preferredVersion(QuicConnection.QuicVersion.V2);
        }
        QuicClientConnection quic = builder.build();
        ExecutorService pool = Executors.newCachedThreadPool();
        Http3ClientConnectionImpl h3 = new Http3ClientConnectionImpl(quic, pool);
        t0 = System.nanoTime();
        Instant started = Instant.now();
        doc.put("started_unix_ms", started.toEpochMilli());
        try {
            h3.connect();
            doc.put("handshake_ms", ms());
            if (f.containsKey("key-update-after-ms")) { // once, while the page is arriving
                long after = Long.parseLong(f.get("key-update-after-ms"));
                pool.submit(() -> {
                    Thread.sleep(after);
                    ((QuicClientConnectionImpl) quic).updateKeys();
                    return null;
                });
            }
            doc.put("protocol", "h3"); // offered alone: a completed handshake negotiated it
            Transfer first = get(h3, uri, uri.getRawPath(), mode.equals("page"), f, mode.equals("bulk"));
            List<Transfer> transfers = new ArrayList<>(List.of(first));
            if (mode.equals("page")) {
                Matcher m = SRC.matcher(new String(first.body, StandardCharsets.UTF_8));
                List<Future<Transfer>> pending = new ArrayList<>();
                while (m.find()) {
                    String path = m.group(1);
                    pending.add(pool.submit(() -> get(h3, uri, path, false, f, false)));
                }
                for (Future<Transfer> t : pending) {
                    transfers.add(t.get((long) (timeoutS * 1000), TimeUnit.MILLISECONDS));
                }
            }
            double plt = ms();
            long total = transfers.stream().mapToLong(t -> t.bytes).sum();
            List<Json> objects = new ArrayList<>();
            for (Transfer t : transfers) {
                objects.add(new Json().put("path", t.path).put("status", t.status).put("bytes", t.bytes)
                        .put("start_ms", t.startMs).put("first_byte_ms", t.firstByteMs).put("end_ms", t.endMs));
            }
            List<Object> goodput = new ArrayList<>();
            for (double[] g : first.goodput) {
                goodput.add(List.of(g[0], (long) g[1]));
            }
            doc.put("objects", objects).put("bytes", total).put("plt_ms", plt).put("ttfb_ms", first.firstByteMs)
                    .put("goodput", goodput).put("goodput_mbit", total * 8.0 / 1000.0 / plt);
            for (Transfer t : transfers) {
                if (t.status == null || t.status != 200) {
                    doc.put("error", "status other than 200 for " + t.path);
                    return 1;
                }
            }
            if (ticketFile != null) { // the newest ticket, for the next connection
                List<QuicSessionTicket> tickets = quic.getNewSessionTickets();
                if (!tickets.isEmpty()) {
                    Files.write(ticketFile, tickets.get(tickets.size() - 1).serialize());
                }
            }
            doc.put("ok", true);
            return 0;
        } finally {
            doc.put("local_addr", null);
            quic.closeAndWait(Duration.ofMillis(500));
            logger.qlog.close();
            pool.shutdownNow();
        }
    }

    private static Transfer get(Http3ClientConnectionImpl h3, URI base, String path, boolean keep,
                                Map<String, String> f, boolean bulk) throws Exception {
        Transfer t = new Transfer();
        t.path = path;
        t.startMs = ms();
        HttpRequest req = HttpRequest.newBuilder(base.resolve(path))
                .header("x-longlook-run", f.getOrDefault("run-id", "")).GET().build();
        HttpResponse<InputStream> resp = h3.send(req, HttpResponse.BodyHandlers.ofInputStream());
        t.firstByteMs = ms();
        t.status = resp.statusCode();
        byte[] buf = new byte[64 * 1024];
        java.io.ByteArrayOutputStream kept = keep ? new java.io.ByteArrayOutputStream() : null;
        double lastSample = -1e9;
        try (InputStream in = resp.body()) {
            int n;
            while ((n = in.read(buf)) >= 0) {
                t.bytes += n;
                if (kept != null) {
                    kept.write(buf, 0, n);
                }
                if (bulk && ms() - lastSample >= 10.0) {
                    lastSample = ms();
                    t.goodput.add(new double[] {lastSample, t.bytes});
                }
            }
        }
        t.endMs = ms();
        t.body = kept != null ? kept.toByteArray() : new byte[0];
        return t;
    }

    /** A JSON object kept in insertion order (numbers, strings, booleans, null, lists, objects). */
    static final class Json {
        private final java.util.LinkedHashMap<String, Object> fields = new java.util.LinkedHashMap<>();

        Json put(String key, Object value) {
            fields.put(key, value);
            return this;
        }

        @Override
        public String toString() {
            StringBuilder s = new StringBuilder("{");
            for (Map.Entry<String, Object> e : fields.entrySet()) {
                s.append(s.length() > 1 ? "," : "").append(quote(e.getKey())).append(':').append(value(e.getValue()));
            }
            return s.append('}').toString();
        }

        private static String value(Object v) {
            if (v == null) {
                return "null";
            }
            if (v instanceof String) {
                return quote((String) v);
            }
            if (v instanceof Double) {
                return String.format(Locale.ROOT, "%.3f", (Double) v);
            }
            if (v instanceof List) {
                StringBuilder s = new StringBuilder("[");
                for (Object x : (List<?>) v) {
                    s.append(s.length() > 1 ? "," : "").append(value(x));
                }
                return s.append(']').toString();
            }
            return v.toString(); // Json, numbers, booleans
        }

        private static String quote(String s) {
            StringBuilder q = new StringBuilder("\"");
            for (char c : s.toCharArray()) {
                if (c == '"' || c == '\\') {
                    q.append('\\').append(c);
                } else if (c < 0x20) {
                    q.append(String.format("\\u%04x", (int) c));
                } else {
                    q.append(c);
                }
            }
            return q.append('"').toString();
        }
    }
}
