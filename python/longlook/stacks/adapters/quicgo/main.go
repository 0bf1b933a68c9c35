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
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
	"github.com/quic-go/quic-go/qlog"
	"github.com/quic-go/quic-go/qlogwriter"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: longlook-quicgo serve|fetch|version ...")
		os.Exit(2)
	}
	switch os.Args[1] {
	case "serve":
		os.Exit(serve(os.Args[2:]))
	case "fetch":
		os.Exit(fetch(os.Args[2:]))
	default:
		fmt.Fprintf(os.Stderr, "unknown command %q\n", os.Args[1])
		os.Exit(2)
	}
}

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
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	listen := fs.String("listen", "0.0.0.0:4433", "UDP address")
	cert := fs.String("cert", "", "certificate PEM")
	key := fs.String("key", "", "key PEM")
	root := fs.String("root", "", "content directory")
	fs.Parse(args)
	if *cert == "" || *key == "" || *root == "" {
		fmt.Fprintln(os.Stderr, "serve: --cert, --key and --root are required")
		return 2
	}
	pair, err := tls.LoadX509KeyPair(*cert, *key)
	if err != nil {
		fmt.Fprintln(os.Stderr, "serve:", err)
		return 2
	}
	srv := &http3.Server{
		Addr:       *listen,
		Handler:    http.FileServer(http.Dir(*root)),
		TLSConfig:  http3.ConfigureTLSConfig(&tls.Config{Certificates: []tls.Certificate{pair}}),
		QUICConfig: quicConfig(),
	}
	ln, err := quic.ListenAddrEarly(*listen, srv.TLSConfig, srv.QUICConfig)
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

type object struct {
	Path        string  `json:"path"`
	Status      int     `json:"status"`
	Bytes       int64   `json:"bytes"`
	StartMs     float64 `json:"start_ms"`
	FirstByteMs float64 `json:"first_byte_ms"`
	EndMs       float64 `json:"end_ms"`
}

type result struct {
	RunID             string          `json:"run_id"`
	URL               string          `json:"url"`
	Mode              string          `json:"mode"`
	ProtocolRequested string          `json:"protocol_requested"`
	Protocol          *string         `json:"protocol"`
	OK                bool            `json:"ok"`
	Error             *string         `json:"error"`
	StartedUnixMs     int64           `json:"started_unix_ms"`
	PltMs             *float64        `json:"plt_ms"`
	HandshakeMs       *float64        `json:"handshake_ms"`
	TtfbMs            *float64        `json:"ttfb_ms"`
	Bytes             int64           `json:"bytes"`
	Objects           []object        `json:"objects"`
	ZeroRTT           map[string]bool `json:"zero_rtt"`
	LocalAddr         *string         `json:"local_addr"`
	Goodput           [][2]float64    `json:"goodput"`
	GoodputMbit       *float64        `json:"goodput_mbit"`
	StoppedEarly      bool            `json:"stopped_early"`
}

var srcRE = regexp.MustCompile(`src="([^"]+)"`)

func fetch(args []string) int {
	fs := flag.NewFlagSet("fetch", flag.ExitOnError)
	url := fs.String("url", "", "https URL")
	ca := fs.String("ca", "", "CA certificate PEM")
	mode := fs.String("mode", "page", "page|bulk")
	runID := fs.String("run-id", "", "x-longlook-run header")
	out := fs.String("out", "", "fetch JSON")
	timeout := fs.Float64("timeout-s", 60, "seconds")
	keylog := fs.String("keylog", "", "append the TLS secrets here (NSS key log format)")
	resume := fs.Bool("resume", false, "a first connection for a session ticket, then the measured one resumes")
	early := fs.Bool("early-data", false, "with --resume: the first request in 0-RTT")
	v2 := fs.Bool("v2", false, "QUIC v2 (RFC 9369) only: quic-go's http3 dials with one version")
	fs.Parse(args)

	newResult := func() *result {
		return &result{RunID: *runID, URL: *url, Mode: *mode, ProtocolRequested: "h3",
			Objects: []object{}, ZeroRTT: map[string]bool{"attempted": false, "accepted": false},
			Goodput: [][2]float64{}}
	}
	opts := asked{v2: *v2}
	limit := time.Duration(*timeout * float64(time.Second))
	if *resume { // the tickets stay in this process' cache: both connections are made here
		opts.sessions = tls.NewLRUClientSessionCache(4)
		run(newResult(), *url, *ca, *mode, *runID, *keylog, limit, opts)
		opts.early = *early
	}
	res := newResult()
	code := run(res, *url, *ca, *mode, *runID, *keylog, limit, opts)
	waitQlogs(2 * time.Second) // run closed the connection: its qlog is being written out
	data, _ := json.Marshal(res)
	if *out == "" {
		os.Stdout.Write(data)
	} else if err := os.WriteFile(*out, data, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "fetch:", err)
		return 1
	}
	return code
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// asked is what the client was asked for beyond a page load (an interop case)
type asked struct {
	sessions tls.ClientSessionCache // resume from this cache's ticket
	early    bool                   // the first request in 0-RTT
	v2       bool                   // QUIC v2 only
}

func run(res *result, url, caFile, mode, runID, keylog string, timeout time.Duration, opts asked) int {
	fail := func(err error) int {
		msg := err.Error()
		res.Error = &msg
		return 1
	}
	pool := x509.NewCertPool()
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return fail(err)
		}
		pool.AppendCertsFromPEM(pem)
	}
	tlsConf := &tls.Config{RootCAs: pool, NextProtos: []string{http3.NextProtoH3}, ClientSessionCache: opts.sessions}
	if keylog != "" { // unbuffered: each secret is on disk once written
		f, err := os.OpenFile(keylog, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return fail(err)
		}
		defer f.Close()
		tlsConf.KeyLogWriter = f
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	t0 := time.Now()
	res.StartedUnixMs = t0.UnixMilli()
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
						handshook <- ms(time.Since(t0))
					case <-c.Context().Done():
					}
				}()
				return c, nil
			}
			c, err := quic.DialAddr(ctx, addr, tlsCfg, cfg) // returns once the handshake completed
			if err != nil {
				return nil, err
			}
			hs := ms(time.Since(t0))
			res.HandshakeMs = &hs
			alpn := c.ConnectionState().TLS.NegotiatedProtocol
			res.Protocol = &alpn
			local := c.LocalAddr().String()
			res.LocalAddr = &local
			conn = c
			return c, nil
		},
	}
	defer tr.Close()
	client := &http.Client{Transport: tr}
	base := url[:strings.Index(url[len("https://"):], "/")+len("https://")]

	var mu sync.Mutex
	var total int64
	var page strings.Builder // the HTML, kept to find its objects
	method := http.MethodGet
	if opts.early {
		method = http3.MethodGet0RTT
	}
	get := func(u string, sample, keep bool) (object, error) {
		o := object{Path: u[len(base):], StartMs: ms(time.Since(t0))}
		req, _ := http.NewRequestWithContext(ctx, method, u, nil)
		req.Header.Set("x-longlook-run", runID)
		resp, err := client.Do(req)
		if err != nil {
			return o, err
		}
		defer resp.Body.Close()
		o.Status = resp.StatusCode
		o.FirstByteMs = ms(time.Since(t0))
		buf := make([]byte, 64<<10)
		lastSample := time.Duration(0)
		for {
			n, err := resp.Body.Read(buf)
			if n > 0 {
				o.Bytes += int64(n)
				if keep {
					page.Write(buf[:n])
				}
				mu.Lock()
				total += int64(n)
				if sample {
					if now := time.Since(t0); now-lastSample >= 10*time.Millisecond {
						res.Goodput = append(res.Goodput, [2]float64{ms(now), float64(total)})
						lastSample = now
					}
				}
				mu.Unlock()
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				return o, err
			}
		}
		o.EndMs = ms(time.Since(t0))
		if o.Status != 200 {
			return o, fmt.Errorf("%s: status %d", o.Path, o.Status)
		}
		return o, nil
	}

	first, err := get(url, mode == "bulk", mode == "page")
	res.Objects = append(res.Objects, first)
	if err != nil {
		return fail(err)
	}
	ttfb := first.FirstByteMs
	res.TtfbMs = &ttfb
	if mode == "page" {
		srcs := srcRE.FindAllStringSubmatch(page.String(), -1)
		objs := make([]object, len(srcs))
		errs := make([]error, len(srcs))
		var wg sync.WaitGroup
		for i, m := range srcs {
			wg.Add(1)
			go func(i int, path string) {
				defer wg.Done()
				objs[i], errs[i] = get(base+path, false, false)
			}(i, m[1])
		}
		wg.Wait()
		res.Objects = append(res.Objects, objs...)
		if err := errors.Join(errs...); err != nil {
			return fail(err)
		}
	}
	plt := ms(time.Since(t0))
	res.PltMs = &plt
	res.Bytes = total
	if plt > 0 {
		g := float64(total) * 8 / 1000 / plt
		res.GoodputMbit = &g
	}
	res.OK = true
	if conn != nil {
		if opts.early {
			select {
			case hs := <-handshook:
				res.HandshakeMs = &hs
			case <-time.After(time.Second): // the page came without a completed handshake: none to report
			}
			state := conn.ConnectionState()
			res.ZeroRTT["accepted"] = state.Used0RTT
			alpn := state.TLS.NegotiatedProtocol
			res.Protocol = &alpn
			local := conn.LocalAddr().String()
			res.LocalAddr = &local
		}
		conn.CloseWithError(0, "")
	}
	if res.Protocol == nil || *res.Protocol != "h3" {
		return 3
	}
	return 0
}
