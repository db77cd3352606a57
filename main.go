// Command trawler runs browser-based web crawls on Kubernetes: one binary
// that serves the Browsertrix-compatible REST API and runs the operator
// turning each crawl into crawler pods, their PVCs and a Redis pod.
//
// main only wires the commands: `serve` runs app.Serve, `dev` runs the
// development stack of sandbox/devstack; the behaviour lives in api/,
// operator/, store/ and k8s/.
package main

import (
	"fmt"
	"os"

	"github.com/trawlerhq/trawler/app"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	app.Version = version
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "trawler:", err)
		os.Exit(1)
	}
}
