package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/namsral/flag"
)

// scrapeCommand, as the first argument, makes memif-agent a client of an
// agent's metrics listener: `memif-agent scrape http://IP:9752/metrics`
// prints what it serves, from any pod of the agent's image, the way
// Prometheus scrapes it.
const scrapeCommand = "scrape"

// Bounds of one scrape.
const (
	defaultScrapeTimeout = 10 * time.Second
	maxScrapeBytes       = 16 << 20
)

// runScrape GETs the URL args name and prints the body; it returns the
// exit status: 0 when the answer was 200 OK, 1 when it was not or nothing
// answered (why, on stderr), 2 for a bad command line.
func runScrape(args []string, stdout, stderr io.Writer) int {
	flags := flag.NewFlagSet("memif-agent scrape", flag.ContinueOnError)
	flags.SetOutput(stderr)
	timeout := flags.Duration("timeout", defaultScrapeTimeout, "How long to wait for the whole answer")
	flags.Usage = func() {
		fmt.Fprint(stderr, `memif-agent scrape GETs an agent's metrics (metrics.conf's listener, or any
http URL) and prints them, as Prometheus scrapes them. It exits 0 on 200 OK,
1 otherwise, saying why.

Usage: memif-agent scrape [flags] http://ADDRESS:PORT/metrics

Flags:
`)
		flags.PrintDefaults()
	}
	if code, done := parseSubcommandFlags(flags, args); done {
		return code
	}
	if flags.NArg() != 1 {
		flags.Usage()
		return 2
	}
	target, err := url.Parse(flags.Arg(0))
	if err != nil || target.Scheme != "http" || target.Host == "" {
		fmt.Fprintf(stderr, "memif-agent scrape: want an http URL such as http://10.0.0.5:9752/metrics, got %q\n", flags.Arg(0))
		return 2
	}
	if err := scrape(target.String(), *timeout, stdout); err != nil {
		fmt.Fprintf(stderr, "memif-agent scrape: %v\n", err)
		return 1
	}
	return 0
}

func scrape(target string, timeout time.Duration, out io.Writer) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, target, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", target, resp.Status)
	}
	copied, err := io.Copy(out, io.LimitReader(resp.Body, maxScrapeBytes+1))
	if err != nil {
		return fmt.Errorf("GET %s: %w", target, err)
	}
	if copied > maxScrapeBytes {
		return fmt.Errorf("GET %s: the answer is longer than %d bytes; cut off", target, maxScrapeBytes)
	}
	return nil
}
