// longlook-xnetquic: Go's golang.org/x/net/quic with a minimal HTTP/3 of ours (h3.go) as a
// longlook stack (docs/interfaces.md, "Other QUIC stacks").
//
//	longlook-xnetquic serve --listen 0.0.0.0:4433 --cert C --key K --root DIR
//	longlook-xnetquic fetch --url URL --ca PEM --mode page|bulk --run-id ID --out FILE --timeout-s S [--keylog FILE]
//
// The server serves the files the Python side generated under --root (the paths of
// `endpoint serve`); the client writes the fetch JSON of `endpoint fetch`. Both write qlog
// through x/net/quic's own slog handler into $QLOGDIR. Its congestion control is NewReno,
// the only one it has.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/quic-go/qpack"
	"golang.org/x/net/quic"
	"golang.org/x/net/quic/qlog"
	"longlook/gofetch"
)

type ctxT = context.Context

func main() { gofetch.Main("longlook-xnetquic", serve, fetch) }

// the windows of our endpoint and the other adapters (6 MiB per stream, 15 MiB per connection)
const (
	streamWindow = 6 << 20
	connWindow   = 15 << 20
	chunk        = 256 << 10 // a body goes out in DATA frames this large
)

// quicConfig is both sides': our flow-control windows, qlog into $QLOGDIR (one file per
// connection) when it is set.
func quicConfig(t *tls.Config) *quic.Config {
	c := &quic.Config{
		TLSConfig:               t,
		MaxStreamReadBufferSize: streamWindow,
		MaxConnReadBufferSize:   connWindow,
		MaxIdleTimeout:          30 * time.Second,
	}
	if dir := os.Getenv("QLOGDIR"); dir != "" {
		c.QLogLogger = slog.New(qlog.NewJSONHandler(qlog.HandlerOptions{Level: quic.QLogLevelPacket, Dir: dir}))
	}
	return c
}

func serve(args []string) int {
	a, pair, err := gofetch.ParseServe(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		return 2
	}
	conf := quicConfig(&tls.Config{Certificates: []tls.Certificate{pair}, NextProtos: []string{"h3"}, MinVersion: tls.VersionTLS13})
	conf.RequireAddressValidation = a.Retry // a Retry to every Initial without a token
	ep, err := quic.Listen("udp", a.Listen, conf)
	if err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		return 1
	}
	fmt.Println("ready")
	ctx := context.Background()
	for {
		conn, err := ep.Accept(ctx)
		if err != nil {
			fmt.Fprintln(os.Stderr, "serve:", err)
			return 1
		}
		go serveConn(ctx, conn, a.Root)
	}
}

func serveConn(ctx ctxT, conn *quic.Conn, root string) {
	if _, err := openControl(conn, ctx); err != nil {
		fmt.Fprintln(os.Stderr, "connection:", err)
		return
	}
	drainPeerStreams(conn, ctx, func(s *quic.Stream) { serveRequest(s, root) })
}

// serveRequest answers one GET with the file at its path under root, or 404.
func serveRequest(s *quic.Stream, root string) {
	defer s.CloseWrite()
	// x/net/quic raises the client's MAX_STREAMS only once a stream's receive side is closed
	// (its inUnlockNoQueue): without this a page of more than 100 objects waits forever for
	// stream credit. A GET's request ends with its headers, so nothing is refused.
	defer s.CloseRead()
	fields, err := readHeaders(s)
	if err != nil {
		s.Reset(0x101) // H3_GENERAL_PROTOCOL_ERROR
		return
	}
	status, body := readFile(root, fields[":path"])
	head, _ := headersFrame(
		qpack.HeaderField{Name: ":status", Value: strconv.Itoa(status)},
		qpack.HeaderField{Name: "content-length", Value: strconv.Itoa(len(body))},
	)
	if _, err := s.Write(head); err != nil {
		return
	}
	for at := 0; at < len(body); at += chunk {
		end := min(at+chunk, len(body))
		frame := appendVarint(appendVarint(nil, frameData), uint64(end-at))
		if _, err := s.Write(frame); err != nil {
			return
		}
		if _, err := s.Write(body[at:end]); err != nil {
			return
		}
	}
}

func readFile(root, urlPath string) (int, []byte) {
	rel := strings.TrimPrefix(strings.SplitN(urlPath, "?", 2)[0], "/")
	if rel == "" {
		rel = "index.html"
	}
	for _, part := range strings.Split(rel, "/") {
		if part == ".." || part == "" {
			return 404, []byte("not found\n")
		}
	}
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		return 404, []byte("not found\n")
	}
	return 200, b
}

func fetch(args []string) int {
	fs := flag.NewFlagSet("fetch", flag.ExitOnError)
	f := gofetch.AddFlags(fs)
	fs.Parse(args)
	res := gofetch.NewResult(f)
	ctx, cancel := context.WithTimeout(context.Background(), f.Limit())
	defer cancel()
	code := run(ctx, res, f)
	if ctx.Err() != nil && !res.OK {
		res.Error = gofetch.Ptr(fmt.Sprintf("no result within %.0f s", f.Timeout))
	}
	return res.Write(f.Out, code)
}

func run(ctx ctxT, res *gofetch.Result, f *gofetch.Flags) int {
	rest, ok := strings.CutPrefix(f.URL, "https://")
	if !ok {
		return res.Fail(errors.New("--url must be https://"))
	}
	authority, path, _ := strings.Cut(rest, "/")
	host, _, err := net.SplitHostPort(authority)
	if err != nil {
		return res.Fail(err)
	}
	tlsConf, keylog, err := f.ClientTLS()
	if err != nil {
		return res.Fail(err)
	}
	if keylog != nil {
		defer keylog.Close()
	}
	tlsConf.ServerName, tlsConf.MinVersion = host, tls.VersionTLS13
	conf := quicConfig(tlsConf)
	ep, err := quic.Listen("udp", "0.0.0.0:0", conf)
	if err != nil {
		return res.Fail(err)
	}
	defer ep.Close(context.Background())
	res.Start()
	conn, err := ep.Dial(ctx, "udp", authority, conf) // returns once the handshake completed
	if err != nil {
		if strings.Contains(err.Error(), "no_application_protocol") {
			res.Error = gofetch.Ptr(fmt.Sprintf("handshake: the server offers no h3 (%v)", err))
			return 3
		}
		return res.Fail(fmt.Errorf("handshake: %w", err))
	}
	res.HandshakeMs = gofetch.Ptr(res.Since())
	res.Protocol = gofetch.Ptr(conn.ConnectionState().NegotiatedProtocol)
	res.LocalAddr = gofetch.Ptr(conn.LocalAddr().String())
	defer func() { // close with H3_NO_ERROR and wait (briefly) for it to go out
		conn.Abort(&quic.ConnectionCloseError{Code: h3NoError})
		wait, stop := context.WithTimeout(context.Background(), time.Second)
		defer stop()
		conn.Wait(wait)
	}()
	if _, err := openControl(conn, ctx); err != nil {
		return res.Fail(err)
	}
	go drainPeerStreams(conn, ctx, nil)

	get := func(p string, sample, keep bool) (gofetch.Object, []byte, error) {
		o := gofetch.Object{Path: p, StartMs: res.Since()}
		s, err := conn.NewStream(ctx)
		if err != nil {
			return o, nil, err
		}
		defer s.CloseRead()
		head, err := headersFrame(
			qpack.HeaderField{Name: ":method", Value: "GET"},
			qpack.HeaderField{Name: ":scheme", Value: "https"},
			qpack.HeaderField{Name: ":authority", Value: authority},
			qpack.HeaderField{Name: ":path", Value: p},
			qpack.HeaderField{Name: "x-longlook-run", Value: f.RunID},
		)
		if err != nil {
			return o, nil, err
		}
		if _, err := s.Write(head); err != nil {
			return o, nil, err
		}
		s.CloseWrite() // the request ends here (FIN)
		fields, err := readHeaders(s)
		if err != nil {
			return o, nil, fmt.Errorf("response %s: %w", p, err)
		}
		o.FirstByteMs = gofetch.Ptr(res.Since())
		o.Status, _ = strconv.Atoi(fields[":status"])
		var body []byte
		err = readBody(s, func(b []byte) {
			o.Bytes += int64(len(b))
			if keep {
				body = append(body, b...)
			}
			res.Received(len(b), sample)
		})
		if err != nil {
			return o, nil, fmt.Errorf("body %s: %w", p, err)
		}
		o.EndMs = gofetch.Ptr(res.Since())
		if o.Status != 200 {
			return o, nil, fmt.Errorf("status other than 200 for %s", p)
		}
		return o, body, nil
	}
	if err := res.Load("/"+path, get); err != nil {
		return res.Fail(err)
	}
	if *res.Protocol != "h3" {
		return 3
	}
	return 0
}
