// Package gofetch is what longlook's Go programs share (quic-go's adapter, x/net/quic's): the
// harness's serve and fetch flags, the fetch JSON of `endpoint fetch` (docs/interfaces.md), and
// the shape of a page load (the HTML, then every src="..." in it at once), each adapter
// bringing its own GET. The stack builder copies it beside the program it builds
// (stacks/builds/go_module.py).
package gofetch

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"sync"
	"time"
)

// Object is one object's timings, ms from the fetch's start.
type Object struct {
	Path        string   `json:"path"`
	Status      int      `json:"status"`
	Bytes       int64    `json:"bytes"`
	StartMs     float64  `json:"start_ms"`
	FirstByteMs *float64 `json:"first_byte_ms"`
	EndMs       *float64 `json:"end_ms"`
}

// Result is the fetch JSON.
type Result struct {
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
	Objects           []Object        `json:"objects"`
	ZeroRTT           map[string]bool `json:"zero_rtt"`
	LocalAddr         *string         `json:"local_addr"`
	Goodput           [][2]float64    `json:"goodput"`
	GoodputMbit       *float64        `json:"goodput_mbit"`
	StoppedEarly      bool            `json:"stopped_early"`
	Migration         *Migration      `json:"migration,omitempty"`

	mu         sync.Mutex
	t0         time.Time
	lastSample time.Duration
}

// Migration is what a client asked to move did, as `endpoint fetch` records it.
type Migration struct {
	PlannedAtMs float64  `json:"planned_at_ms"` // when it was asked for, ms after the fetch started
	AtMs        *float64 `json:"at_ms"`         // when the client moved (null: it did not)
	To          *string  `json:"to"`            // its local address after the move
	NotMoved    *string  `json:"not_moved"`     // why it did not move
}

// SetMigration records the move (from the goroutine that made it).
func (r *Result) SetMigration(m Migration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Migration = &m
}

// Flags are the harness's fetch flags every client takes.
type Flags struct {
	URL, CA, Mode, RunID, Out, Keylog string
	Timeout                           float64
}

// AddFlags registers the harness's fetch flags on fs.
func AddFlags(fs *flag.FlagSet) *Flags {
	f := &Flags{}
	fs.StringVar(&f.URL, "url", "", "https URL")
	fs.StringVar(&f.CA, "ca", "", "CA certificate PEM")
	fs.StringVar(&f.Mode, "mode", "page", "page|bulk")
	fs.StringVar(&f.RunID, "run-id", "", "x-longlook-run header")
	fs.StringVar(&f.Out, "out", "", "fetch JSON")
	fs.Float64Var(&f.Timeout, "timeout-s", 60, "seconds")
	fs.StringVar(&f.Keylog, "keylog", "", "append the TLS secrets here (NSS key log format)")
	return f
}

// Limit is the fetch's time limit.
func (f *Flags) Limit() time.Duration { return time.Duration(f.Timeout * float64(time.Second)) }

// NewResult is the fetch JSON before anything happened.
func NewResult(f *Flags) *Result {
	return &Result{RunID: f.RunID, URL: f.URL, Mode: f.Mode, ProtocolRequested: "h3", Objects: []Object{},
		ZeroRTT: map[string]bool{"attempted": false, "accepted": false}, Goodput: [][2]float64{}}
}

// Ms is a duration in milliseconds.
func Ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Ptr is a pointer to v.
func Ptr[T any](v T) *T { return &v }

// Start sets the fetch's clock going.
func (r *Result) Start() time.Time {
	r.t0 = time.Now()
	r.StartedUnixMs = r.t0.UnixMilli()
	return r.t0
}

// Since is ms since Start.
func (r *Result) Since() float64 { return Ms(time.Since(r.t0)) }

// Fail records err as the fetch's error; returns the exit status 1.
func (r *Result) Fail(err error) int {
	r.Error = Ptr(err.Error())
	return 1
}

// Received counts n bytes of a body as they arrive; `sample`: the object whose goodput series
// the fetch JSON keeps (a bulk download's), one point per 10 ms at the most.
func (r *Result) Received(n int, sample bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Bytes += int64(n)
	if now := time.Since(r.t0); sample && now-r.lastSample >= 10*time.Millisecond {
		r.Goodput = append(r.Goodput, [2]float64{Ms(now), float64(r.Bytes)})
		r.lastSample = now
	}
}

// Get is an adapter's GET of one path: the object's timings and, if `keep`, its body.
type Get func(path string, sample, keep bool) (Object, []byte, error)

var srcRE = regexp.MustCompile(`src="([^"]+)"`)

// Load fetches `first`, and in page mode every src="..." of it at once; then the load time,
// the goodput and OK. The first error of any object is the fetch's.
func (r *Result) Load(first string, get Get) error {
	page := r.Mode == "page"
	o, html, err := get(first, !page, page)
	r.Objects = append(r.Objects, o)
	if err != nil {
		return err
	}
	r.TtfbMs = o.FirstByteMs
	if page {
		srcs := srcRE.FindAllStringSubmatch(string(html), -1)
		objs := make([]Object, len(srcs))
		errs := make([]error, len(srcs))
		var wg sync.WaitGroup
		for i, m := range srcs {
			wg.Add(1)
			go func(i int, path string) {
				defer wg.Done()
				objs[i], _, errs[i] = get(path, false, false)
			}(i, m[1])
		}
		wg.Wait()
		r.Objects = append(r.Objects, objs...)
		if err := errors.Join(errs...); err != nil {
			return err
		}
	}
	plt := r.Since()
	r.PltMs = &plt
	if plt > 0 {
		r.GoodputMbit = Ptr(float64(r.Bytes) * 8 / 1000 / plt)
	}
	r.OK = true
	return nil
}

// Write writes the fetch JSON to `out` (stdout when empty); returns code, or 1 when it
// could not be written.
func (r *Result) Write(out string, code int) int {
	r.mu.Lock()
	data, _ := json.Marshal(r)
	r.mu.Unlock()
	if out == "" {
		os.Stdout.Write(data)
		return code
	}
	if err := os.WriteFile(out, data, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "fetch:", err)
		return 1
	}
	return code
}

// ClientTLS is the client's TLS config: the servers verified against --ca alone, ALPN h3, and
// with --keylog the secrets appended there, unbuffered (each on disk once written); close the
// returned file (nil without --keylog) when done.
func (f *Flags) ClientTLS() (*tls.Config, *os.File, error) {
	pool := x509.NewCertPool()
	if f.CA != "" {
		pem, err := os.ReadFile(f.CA)
		if err != nil {
			return nil, nil, err
		}
		pool.AppendCertsFromPEM(pem)
	}
	conf := &tls.Config{RootCAs: pool, NextProtos: []string{"h3"}}
	if f.Keylog == "" {
		return conf, nil, nil
	}
	file, err := os.OpenFile(f.Keylog, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, nil, err
	}
	conf.KeyLogWriter = file
	return conf, file, nil
}
