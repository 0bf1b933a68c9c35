package tech.kwik.qlog;

import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Locale;

import tech.kwik.core.frame.AckFrame;
import tech.kwik.core.frame.CryptoFrame;
import tech.kwik.core.frame.MaxDataFrame;
import tech.kwik.core.frame.MaxStreamDataFrame;
import tech.kwik.core.frame.Padding;
import tech.kwik.core.frame.QuicFrame;
import tech.kwik.core.frame.StreamFrame;
import tech.kwik.core.log.QLog;
import tech.kwik.core.packet.QuicPacket;

/**
 * kwik's qlog, written by longlook: one JSON-SEQ file per connection (qlog 0.3 names) in the
 * directory named by the system property {@code longlook.qlog.dir}.
 *
 * <p>kwik publishes its events through {@link QLog}; its own writer (the {@code tech.kwik.qlog}
 * module) is not on Maven Central. kwik's server looks this class up by name, one instance per
 * connection (LogProxy), so it lives in kwik's package; the client gets one from its logger.
 * kwik's NewReno logs no ssthresh and no congestion state: the reader derives the states
 * from the window (qlog/dialects.py).
 */
public class QLogFrontEnd implements QLog {
    public static volatile Instant handshakeDone; // the client's: when HANDSHAKE_DONE arrived

    // whole records only reach the file (a reader may take it while the connection lives):
    // gathered here, written when 64 KB are pending or 100 ms have passed
    private static final int FLUSH_BYTES = 64 * 1024;
    private static final long FLUSH_NANOS = 100_000_000L;
    private final StringBuilder pending = new StringBuilder();
    private long flushedAt = System.nanoTime();
    private final Writer out;
    private final Instant t0 = Instant.now();
    private final String side;

    public QLogFrontEnd(byte[] connectionId) {
        this.side = System.getProperty("longlook.qlog.side", "server");
        String dir = System.getProperty("longlook.qlog.dir");
        Writer w = null;
        if (dir != null) {
            String name = String.format("%d-%s_%s.sqlog", System.currentTimeMillis(), hex(connectionId), side);
            try {
                w = new OutputStreamWriter(Files.newOutputStream(Path.of(dir, name)), StandardCharsets.UTF_8);
            } catch (IOException e) {
                System.err.println("qlog: " + e);
            }
        }
        out = w;
        record(String.format(Locale.ROOT, "{\"qlog_version\":\"0.3\",\"qlog_format\":\"JSON-SEQ\","
                + "\"title\":\"longlook-kwik %s\",\"trace\":{\"vantage_point\":{\"type\":\"%s\"},"
                + "\"common_fields\":{\"protocol_type\":[\"QUIC\"],\"time_format\":\"relative\","
                + "\"reference_time\":%d},\"configuration\":{\"congestion_control\":\"newreno\"}}}",
                side, side, t0.toEpochMilli()));
    }

    private static String hex(byte[] b) {
        StringBuilder s = new StringBuilder();
        for (byte x : b == null ? new byte[0] : b) {
            s.append(String.format("%02x", x));
        }
        return s.toString();
    }

    private synchronized void record(String json) {
        if (out == null) {
            return;
        }
        pending.append('\u001e').append(json).append('\n');
        if (pending.length() >= FLUSH_BYTES || System.nanoTime() - flushedAt >= FLUSH_NANOS) {
            flush();
        }
    }

    private synchronized void flush() {
        if (out == null || pending.length() == 0) {
            return;
        }
        try {
            out.write(pending.toString());
            out.flush();
        } catch (IOException e) {
            // a full disk: the log is cut short, the reader says so
        }
        pending.setLength(0);
        flushedAt = System.nanoTime();
    }

    private void event(Instant at, String name, String data) {
        double ms = Duration.between(t0, at).toNanos() / 1e6;
        record(String.format(Locale.ROOT, "{\"time\":%.3f,\"name\":\"%s\",\"data\":%s}", ms, name, data));
    }

    private static String packetType(QuicPacket p) {
        switch (p.getEncryptionLevel()) {
            case Initial: return "initial";
            case Handshake: return "handshake";
            case ZeroRTT: return "0RTT";
            default: return "1RTT";
        }
    }

    private static String header(QuicPacket p) {
        return String.format("{\"packet_type\":\"%s\",\"packet_number\":%s}", packetType(p), p.getPacketNumber());
    }

    private static String frame(QuicFrame f) {
        if (f instanceof StreamFrame) {
            StreamFrame s = (StreamFrame) f;
            return String.format("{\"frame_type\":\"stream\",\"stream_id\":%d,\"offset\":%d,\"length\":%d,\"fin\":%b}",
                    s.getStreamId(), s.getOffset(), s.getLength(), s.isFinal());
        }
        if (f instanceof AckFrame) {
            return String.format("{\"frame_type\":\"ack\",\"largest_acknowledged\":%d}", ((AckFrame) f).getLargestAcknowledged());
        }
        if (f instanceof MaxDataFrame) {
            return String.format("{\"frame_type\":\"max_data\",\"maximum\":%d}", ((MaxDataFrame) f).getMaxData());
        }
        if (f instanceof MaxStreamDataFrame) {
            return "{\"frame_type\":\"max_stream_data\"}";
        }
        if (f instanceof CryptoFrame) {
            CryptoFrame c = (CryptoFrame) f;
            return String.format("{\"frame_type\":\"crypto\",\"offset\":%d,\"length\":%d}", c.getOffset(), c.getLength());
        }
        if (f instanceof Padding) {
            return String.format("{\"frame_type\":\"padding\",\"length\":%d}", ((Padding) f).getLength());
        }
        // the others by class name: HandshakeDoneFrame -> handshake_done
        String name = f.getClass().getSimpleName().replaceAll("Frame$", "");
        return "{\"frame_type\":\"" + name.replaceAll("([a-z])([A-Z])", "$1_$2").toLowerCase(Locale.ROOT) + "\"}";
    }

    private static String packet(QuicPacket p) {
        StringBuilder frames = new StringBuilder();
        for (QuicFrame f : p.getFrames()) {
            frames.append(frames.length() == 0 ? "" : ",").append(frame(f));
        }
        return String.format("{\"header\":%s,\"raw\":{\"length\":%d},\"frames\":[%s]}", header(p), p.getSize(), frames);
    }

    @Override
    public void emitConnectionCreatedEvent(Instant at) {
        event(at, "connectivity:connection_started", "{}");
    }

    @Override
    public void emitPacketSentEvent(QuicPacket p, Instant at) {
        event(at, "transport:packet_sent", packet(p));
    }

    @Override
    public void emitPacketSentEvent(List<QuicPacket> packets, Instant at) {
        for (QuicPacket p : packets) {
            emitPacketSentEvent(p, at);
        }
    }

    @Override
    public void emitPacketReceivedEvent(QuicPacket p, Instant at) {
        if (handshakeDone == null && p.getFrames().stream().anyMatch(f -> f.getClass().getSimpleName().equals("HandshakeDoneFrame"))) {
            handshakeDone = at;
        }
        event(at, "transport:packet_received", packet(p));
    }

    @Override
    public void emitPacketLostEvent(QuicPacket p, Instant at) {
        event(at, "recovery:packet_lost", String.format("{\"header\":%s}", header(p)));
    }

    @Override
    public void emitCongestionControlMetrics(long cwnd, long inFlight) {
        event(Instant.now(), "recovery:metrics_updated",
                String.format("{\"congestion_window\":%d,\"bytes_in_flight\":%d}", cwnd, inFlight));
    }

    @Override
    public void emitRttMetrics(int smoothed, int rttVar, int latest) {
        event(Instant.now(), "recovery:metrics_updated",
                String.format("{\"smoothed_rtt\":%d,\"rtt_variance\":%d,\"latest_rtt\":%d}", smoothed, rttVar, latest));
    }

    @Override
    public void emitRecoveryMetrics(long cwnd, long inFlight, int smoothed, int rttVar, int latest) {
        event(Instant.now(), "recovery:metrics_updated", String.format(
                "{\"congestion_window\":%d,\"bytes_in_flight\":%d,\"smoothed_rtt\":%d,\"rtt_variance\":%d,\"latest_rtt\":%d}",
                cwnd, inFlight, smoothed, rttVar, latest));
    }

    @Override
    public void emitConnectionTerminatedEvent() {
        close();
    }

    @Override
    public void emitConnectionClosedEvent(Instant at) {
        event(at, "connectivity:connection_closed", "{}");
        flush();
    }

    @Override
    public void emitConnectionClosedEvent(Instant at, long errorCode, String reason) {
        event(at, "connectivity:connection_closed", String.format("{\"error_code\":%d}", errorCode));
        flush();
    }

    /** Flush and close the file (the connection ended, or the client exits). */
    public synchronized void close() {
        flush();
        if (out != null) {
            try {
                out.close();
            } catch (IOException e) {
                // nothing more to write
            }
        }
    }
}
