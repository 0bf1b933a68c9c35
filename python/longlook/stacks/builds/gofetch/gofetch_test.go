package gofetch

import (
	"errors"
	"flag"
	"testing"
)

func TestAPageLoadsItsHTMLThenEveryObjectOnce(t *testing.T) {
	fs := flag.NewFlagSet("fetch", flag.ContinueOnError)
	f := AddFlags(fs)
	if err := fs.Parse([]string{"--url", "https://s/page/2x1k.html", "--mode", "page", "--run-id", "r"}); err != nil {
		t.Fatal(err)
	}
	r := NewResult(f)
	r.Start()
	asked := map[string]int{}
	get := func(p string, sample, keep bool) (Object, []byte, error) {
		asked[p]++
		body := []byte(nil)
		if keep {
			body = []byte(`<img src="/obj/1k/0.jpg"><img src="/obj/1k/1.jpg">`)
		}
		r.Received(1000, sample)
		return Object{Path: p, Status: 200, FirstByteMs: Ptr(1.0)}, body, nil
	}
	if err := r.Load("/page/2x1k.html", get); err != nil {
		t.Fatal(err)
	}
	if len(r.Objects) != 3 || asked["/obj/1k/0.jpg"] != 1 || asked["/obj/1k/1.jpg"] != 1 || !r.OK || r.Bytes != 3000 {
		t.Fatalf("%+v %v", r.Objects, asked)
	}
	if *r.TtfbMs != 1.0 || r.PltMs == nil || len(r.Goodput) != 0 {
		t.Fatalf("ttfb %v plt %v goodput %v", r.TtfbMs, r.PltMs, r.Goodput)
	}
}

func TestAFailedObjectFailsTheLoad(t *testing.T) {
	r := NewResult(&Flags{Mode: "bulk"})
	r.Start()
	err := r.Load("/bulk/x", func(p string, sample, keep bool) (Object, []byte, error) {
		return Object{Path: p, Status: 404}, nil, errors.New("status other than 200 for /bulk/x")
	})
	if err == nil || r.OK || len(r.Objects) != 1 || r.Fail(err) != 1 || *r.Error != err.Error() {
		t.Fatalf("%v %+v", err, r)
	}
}
