// longlook-quicgo: quic-go's HTTP/3 as a longlook stack (docs/interfaces.md, "Stacks").
//
//	longlook-quicgo serve --listen 0.0.0.0:4433 --cert C --key K --root DIR
//	longlook-quicgo fetch --url URL --ca PEM --mode page|bulk --run-id ID --out FILE --timeout-s S
//
// The server serves the files the Python side generated under --root (the paths of
// `endpoint serve`); the client writes the fetch JSON of `endpoint fetch`. Both write qlog
// through quic-go's own tracer into $QLOGDIR. quic-go's congestion control is NewReno,
// hard-coded: there is no flag for it.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/quic-go/qlog"
	"github.com/quic-go/quic-go/qlogwriter"
	"longlook/gofetch"
)

func main() { gofetch.Main("longlook-quicgo", serve, fetch) }

// quicConfig is both sides': Allow0RTT is the server's, which otherwise refuses every 0-RTT
// packet although it listens for them (ListenAddrEarly) and issues tickets
func quicConfig() *quic.Config {
	return &quic.Config{Tracer: tracer, MaxIdleTimeout: 30 * time.Second, Allow0RTT: true}
}

// qlogsOpen counts qlog producers not yet closed. quic-go writes a qlog file from a goroutine
// and closes it when the connection's last producer closes; a client exiting before that cut
// its file at the last 64 KiB buffer flush. fetch waits for them (waitQlogs).
var qlogsOpen sync.WaitGroup

// tracer is quic-go's QLOGDIR tracer, with its producers counted.
func tracer(ctx context.Context, isClient bool, connID quic.ConnectionID) qlogwriter.Trace {
	t := qlog.DefaultConnectionTracer(ctx, isClient, connID)
	if t == nil {
		return nil
	}
	return countedTrace{t}
}

type countedTrace struct{ qlogwriter.Trace }

func (t countedTrace) AddProducer() qlogwriter.Recorder {
	r := t.Trace.AddProducer()
	if r == nil {
		return nil
	}
	qlogsOpen.Add(1)
	return &countedRecorder{Recorder: r}
}

type countedRecorder struct {
	qlogwriter.Recorder
	once sync.Once
}

// Close returns once the file is written when this was the trace's last producer.
func (r *countedRecorder) Close() error {
	err := r.Recorder.Close()
	r.once.Do(qlogsOpen.Done)
	return err
}

// waitQlogs waits up to `limit` for every qlog file to be written out.
func waitQlogs(limit time.Duration) {
	done := make(chan struct{})
	go func() { qlogsOpen.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(limit):
		fmt.Fprintln(os.Stderr, "fetch: qlog not closed within", limit)
	}
}

func serve(args []string) int {
	a, pair, err := gofetch.ParseServe(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		return 2
	}
	srv := &http3.Server{
		Addr:       a.Listen,
		Handler:    http.FileServer(http.Dir(a.Root)),
		TLSConfig:  http3.ConfigureTLSConfig(&tls.Config{Certificates: []tls.Certificate{pair}}),
		QUICConfig: quicConfig(),
	}
	udp, err := net.ListenPacket("udp", a.Listen)
	if err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		return 1
	}
	tr := &quic.Transport{Conn: udp}
	if a.Retry { // every address not yet validated by a token is asked to prove itself
		tr.VerifySourceAddress = func(net.Addr) bool { return true }
	}
	ln, err := tr.ListenEarly(srv.TLSConfig, srv.QUICConfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		return 1
	}
	fmt.Println("ready")
	if err := srv.ServeListener(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, "serve:", err)
		return 1
	}
	return 0
}

func fetch(args []string) int {
	fs := flag.NewFlagSet("fetch", flag.ExitOnError)
	f := gofetch.AddFlags(fs)
	resume := fs.Bool("resume", false, "a first connection for a session ticket, then the measured one resumes")
	early := fs.Bool("early-data", false, "with --resume: the first request in 0-RTT")
	v2 := fs.Bool("v2", false, "QUIC v2 (RFC 9369) only: quic-go's http3 dials with one version")
	moveAt := fs.Float64("migrate-at-ms", 0, "move to --migrate-to this long after the fetch started (ms)")
	moveTo := fs.String("migrate-to", "", "the client's address on the path it moves to")
	fs.Parse(args)

	opts := asked{v2: *v2}
	if *moveTo != "" {
		opts.move = &plannedMove{atMs: *moveAt, to: *moveTo}
	}
	if *resume { // the tickets stay in this process' cache: both connections are made here
		opts.sessions = tls.NewLRUClientSessionCache(4)
		run(gofetch.NewResult(f), f, opts)
		opts.early = *early
	}
	res := gofetch.NewResult(f)
	code := run(res, f, opts)
	waitQlogs(2 * time.Second) // run closed the connection: its qlog is being written out
	return res.Write(f.Out, code)
}

// asked is what the client was asked for beyond a page load (an interop case)
type asked struct {
	sessions tls.ClientSessionCache // resume from this cache's ticket
	early    bool                   // the first request in 0-RTT
	v2       bool                   // QUIC v2 only
	move     *plannedMove           // connection migration to another of the client's addresses
}

type plannedMove struct {
	atMs float64 // ms after the fetch started
	to   string  // the client's address on the new path
}

// moveConnIDLength is the length of the client's own connection IDs when it will move: quic-go
// routes a new path's packets to their connection by them, and DialAddr's client has none.
const moveConnIDLength = 8

// dialWithConnIDs is quic.DialAddr on a Transport of its own whose connection IDs are
// moveConnIDLength bytes long.
func dialWithConnIDs(ctx context.Context, addr string, tlsCfg *tls.Config, cfg *quic.Config) (*quic.Conn, error) {
	server, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, err
	}
	udp, err := net.ListenUDP("udp", nil)
	if err != nil {
		return nil, err
	}
	return (&quic.Transport{Conn: udp, ConnectionIDLength: moveConnIDLength}).Dial(ctx, server, tlsCfg, cfg)
}

// migrate moves c to a socket on the planned address at the planned time after t0: quic-go's
// AddPath, Probe (PATH_CHALLENGE on the new path, with a new connection ID) and Switch. What
// happened goes into the fetch's migration record.
func migrate(c *quic.Conn, m plannedMove, t0 time.Time, res *gofetch.Result) {
	rec := gofetch.Migration{PlannedAtMs: m.atMs}
	defer func() { res.SetMigration(rec) }()
	notMoved := func(why string, err error) { rec.NotMoved = gofetch.Ptr(fmt.Sprintf("%s: %v", why, err)) }
	select {
	case <-time.After(time.Until(t0.Add(time.Duration(m.atMs * float64(time.Millisecond))))):
	case <-c.Context().Done():
		notMoved("the connection ended first", context.Cause(c.Context()))
		return
	}
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.ParseIP(m.to)})
	if err != nil {
		notMoved("binding the new address", err)
		return
	}
	path, err := c.AddPath(&quic.Transport{Conn: udp, ConnectionIDLength: moveConnIDLength})
	if err != nil {
		notMoved("AddPath", err)
		return
	}
	ctx, cancel := context.WithTimeout(c.Context(), 5*time.Second)
	defer cancel()
	if err := path.Probe(ctx); err != nil {
		notMoved("probing the new path", err)
		return
	}
	if err := path.Switch(); err != nil {
		notMoved("switching to the new path", err)
		return
	}
	rec.AtMs = gofetch.Ptr(gofetch.Ms(time.Since(t0)))
	rec.To = gofetch.Ptr(udp.LocalAddr().String())
}

func run(res *gofetch.Result, f *gofetch.Flags, opts asked) int {
	tlsConf, keylog, err := f.ClientTLS()
	if err != nil {
		return res.Fail(err)
	}
	if keylog != nil {
		defer keylog.Close()
	}
	tlsConf.ClientSessionCache = opts.sessions
	ctx, cancel := context.WithTimeout(context.Background(), f.Limit())
	defer cancel()
	t0 := res.Start()
	var conn *quic.Conn
	// with early data the dial returns before the handshake: its end, ms from t0, comes here
	handshook := make(chan float64, 1)
	qconf := quicConfig()
	if opts.v2 { // http3 dials with one version only: v2, and a server without it fails the case
		qconf.Versions = []quic.Version{quic.Version2}
	}
	tr := &http3.Transport{
		TLSClientConfig: tlsConf,
		QUICConfig:      qconf,
		Dial: func(ctx context.Context, addr string, tlsCfg *tls.Config, cfg *quic.Config) (*quic.Conn, error) {
			if opts.early { // returns at once: 0-RTT requests go before the handshake completes
				c, err := quic.DialAddrEarly(ctx, addr, tlsCfg, cfg)
				if err != nil {
					return nil, err
				}
				res.ZeroRTT["attempted"] = true
				conn = c
				go func() {
					select {
					case <-c.HandshakeComplete():
						handshook <- gofetch.Ms(time.Since(t0))
					case <-c.Context().Done():
					}
				}()
				return c, nil
			}
			dial := quic.DialAddr
			if opts.move != nil {
				dial = dialWithConnIDs
			}
			c, err := dial(ctx, addr, tlsCfg, cfg) // returns once the handshake completed
			if err != nil {
				return nil, err
			}
			res.HandshakeMs = gofetch.Ptr(res.Since())
			res.Protocol = gofetch.Ptr(c.ConnectionState().TLS.NegotiatedProtocol)
			res.LocalAddr = gofetch.Ptr(c.LocalAddr().String())
			conn = c
			if opts.move != nil {
				go migrate(c, *opts.move, t0, res)
			}
			return c, nil
		},
	}
	defer tr.Close()
	client := &http.Client{Transport: tr}
	base := f.URL[:strings.Index(f.URL[len("https://"):], "/")+len("https://")]

	method := http.MethodGet
	if opts.early {
		method = http3.MethodGet0RTT
	}
	get := func(p string, sample, keep bool) (gofetch.Object, []byte, error) {
		o := gofetch.Object{Path: p, StartMs: res.Since()}
		req, _ := http.NewRequestWithContext(ctx, method, base+p, nil)
		req.Header.Set("x-longlook-run", f.RunID)
		resp, err := client.Do(req)
		if err != nil {
			return o, nil, err
		}
		defer resp.Body.Close()
		o.Status = resp.StatusCode
		o.FirstByteMs = gofetch.Ptr(res.Since())
		var body []byte
		buf := make([]byte, 64<<10)
		for {
			n, err := resp.Body.Read(buf)
			if n > 0 {
				o.Bytes += int64(n)
				if keep {
					body = append(body, buf[:n]...)
				}
				res.Received(n, sample)
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				return o, nil, err
			}
		}
		o.EndMs = gofetch.Ptr(res.Since())
		if o.Status != 200 {
			return o, nil, fmt.Errorf("%s: status %d", o.Path, o.Status)
		}
		return o, body, nil
	}
	if err := res.Load(f.URL[len(base):], get); err != nil {
		return res.Fail(err)
	}
	if conn != nil {
		if opts.early {
			select {
			case hs := <-handshook:
				res.HandshakeMs = &hs
			case <-time.After(time.Second): // the page came without a completed handshake: none to report
			}
			state := conn.ConnectionState()
			res.ZeroRTT["accepted"] = state.Used0RTT
			res.Protocol = gofetch.Ptr(state.TLS.NegotiatedProtocol)
			res.LocalAddr = gofetch.Ptr(conn.LocalAddr().String())
		}
		conn.CloseWithError(0, "")
	}
	if res.Protocol == nil || *res.Protocol != "h3" {
		return 3
	}
	return 0
}
