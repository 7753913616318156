package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"shardlab/chart"
	"shardlab/plan"
	"shardlab/web"
)

// newWebFlags defines the flags of web.
func newWebFlags() (*flag.FlagSet, *string) {
	fs := flag.NewFlagSet("web", flag.ContinueOnError)
	addr := new(string)
	addrVar(fs, addr, "addr", "127.0.0.1:8080", "address to serve on; keep it on loopback unless the network is trusted")
	return fs, addr
}

// runWeb serves the web page and API until the process is stopped.
func runWeb(args []string, stdout, stderr io.Writer) error {
	fs, addr := newWebFlags()
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	// The address was read when parsed; listening is the rest of its
	// check. A name that does not resolve or an address not on this
	// machine is bad input; a port in use is the machine's state (exit 1).
	ln, err := net.Listen("tcp", *addr)
	var dns *net.DNSError
	switch {
	case errors.As(err, &dns) && dns.IsNotFound, errors.Is(err, syscall.EADDRNOTAVAIL):
		return bad("web: --addr %s: %v", *addr, listenCause(err))
	case err != nil:
		return fmt.Errorf("web: --addr %s: %w", *addr, listenCause(err))
	}
	if a, ok := ln.Addr().(*net.TCPAddr); !ok || !a.IP.IsLoopback() {
		warn(stderr, "web", "--addr %s is not a loopback address: anyone who can reach it can run searches", *addr)
	}
	fmt.Fprintf(stdout, "shardlab web: serving on http://%s/ (stop with Ctrl-C)\n", ln.Addr())
	logs := log.New(stderr, "shardlab web: ", log.LstdFlags)
	srv := &http.Server{Handler: web.New(web.Config{Log: logs}), ErrorLog: logs, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 2 * time.Minute, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("web: %w", err)
	}
	return nil
}

// listenCause drops what a *net.OpError repeats of the command line
// ("listen tcp 127.0.0.1:1:").
func listenCause(err error) error {
	var oe *net.OpError
	if errors.As(err, &oe) && oe.Err != nil {
		return oe.Err
	}
	return err
}

// chartFiles are plan's --html, --svg and --png outputs.
type chartFiles struct{ html, svg, png string }

func (c chartFiles) any() bool { return c.html != "" || c.svg != "" || c.png != "" }

// check checks before any work that every output can be written, and
// that none is named for another of the three formats: plan --png
// c/a.svg wrote a PNG into a .svg without a word (review 152).
func (c chartFiles) check() error {
	formats := []struct{ flag, path, ext string }{{"--html", c.html, ".html"}, {"--svg", c.svg, ".svg"}, {"--png", c.png, ".png"}}
	for _, f := range formats {
		if f.path == "" {
			continue
		}
		if err := checkOutputFile("plan: "+f.flag, f.path); err != nil {
			return err
		}
		ext := strings.ToLower(filepath.Ext(f.path))
		for _, other := range formats {
			if other.ext != f.ext && (ext == other.ext || other.ext == ".html" && ext == ".htm") {
				return bad("plan: %s %s: a %s name for %s, which writes %s; want a name ending %s, or %s %s",
					f.flag, f.path, ext, f.flag, strings.ToUpper(f.ext[1:]), f.ext, other.flag, f.path)
			}
		}
	}
	return nil
}

// write draws the plans' charts into the files asked for, the HTML
// report with each plan's verify steps where asked for (adds[i].verify).
func (c chartFiles) write(plans []plan.Plan, adds []addenda) error {
	var reports []web.Report
	var all []chart.Chart
	for i, p := range plans {
		charts, skipped, err := chart.All(p)
		if err != nil {
			return err
		}
		reports = append(reports, web.Report{Plan: p, Charts: charts, Skipped: skipped, Verify: adds[i].verify})
		all = append(all, charts...)
	}
	for _, f := range []struct {
		path  string
		write func(io.Writer) error
	}{
		{c.html, func(w io.Writer) error { return web.WriteReport(w, reports...) }},
		{c.svg, func(w io.Writer) error { return chart.WriteSVG(w, all...) }},
		{c.png, func(w io.Writer) error { return chart.WritePNG(w, all...) }},
	} {
		if f.path == "" {
			continue
		}
		var b bytes.Buffer
		if err := f.write(&b); err != nil {
			return err
		}
		if err := os.WriteFile(f.path, b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("plan: %w", err)
		}
	}
	return nil
}
