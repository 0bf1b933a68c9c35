package gofetch

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"os"
)

// ServeArgs are the harness's serve flags every server takes.
type ServeArgs struct {
	Listen, Cert, Key, Root string
	// Retry: a Retry to every client whose address is not yet validated (RFC 9000 8.1.2)
	Retry bool
}

// ParseServe parses the serve flags and loads the certificate; an error means exit status 2.
func ParseServe(args []string) (*ServeArgs, tls.Certificate, error) {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	a := &ServeArgs{}
	fs.StringVar(&a.Listen, "listen", "0.0.0.0:4433", "UDP address")
	fs.StringVar(&a.Cert, "cert", "", "certificate PEM")
	fs.StringVar(&a.Key, "key", "", "key PEM")
	fs.StringVar(&a.Root, "root", "", "content directory")
	fs.BoolVar(&a.Retry, "retry", false, "send a Retry to every client whose address is not validated")
	fs.Parse(args)
	if a.Cert == "" || a.Key == "" || a.Root == "" {
		return nil, tls.Certificate{}, errors.New("--cert, --key and --root are required")
	}
	pair, err := tls.LoadX509KeyPair(a.Cert, a.Key)
	return a, pair, err
}

// Main runs `serve` or `fetch` by the program's first argument and exits with its status.
func Main(program string, serve, fetch func(args []string) int) {
	if len(os.Args) < 2 {
		fmt.Fprintf(os.Stderr, "usage: %s serve|fetch ...\n", program)
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
