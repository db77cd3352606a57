// Command trawler runs browser-based web crawls on Kubernetes: one binary
// that serves the Browsertrix-compatible REST API and runs the operator
// turning each crawl into crawler pods, their PVCs and a Redis pod.
//
// main only wires: it reads configuration, builds clients and starts the
// roles; the behaviour lives in api/, operator/, store/ and k8s/.
package main

import (
	"fmt"
	"os"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

func main() {
	if err := newRootCommand().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "trawler:", err)
		os.Exit(1)
	}
}
