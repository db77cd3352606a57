package crawlersim

import (
	"context"
	"fmt"
	"os"

	"github.com/trawlerhq/trawler/sandbox/kubelet"
)

// Image is the crawler image Browsertrix renders into crawler pods; the
// kubelet's image lookup also maps tagged forms (":latest", ":0.11.2") to
// it.
const Image = "webrecorder/browsertrix-crawler"

// crawlsMount is the crawler container's working directory, the pod's PVC.
const crawlsMount = "/crawls"

// Program adapts Run to the sandbox kubelet: the container's PVC mounted
// at /crawls is the working directory, its other mounts (the crawl config
// subPath) are resolved through Mounts, and its restart count gates
// --sim.faultRuns. The command create-login-profile runs the profile
// browser instead (profilebrowser.go). tune, when not nil, adjusts the options of every run,
// e.g. to set a TimeScale for a whole sandbox.
func Program(tune func(*Options)) kubelet.Program {
	return func(ctx context.Context, c *kubelet.Container) int {
		opts := Options{
			Args:       c.Args,
			Env:        c.Env,
			Hostname:   c.Hostname,
			ListenHost: c.PodIP,
			WorkDir:    c.Mounts[crawlsMount],
			Mounts:     c.Mounts,
			Dial:       c.Dial,
			Stdout:     c.Stdout,
			Killed:     c.Killed,
			Restarts:   c.Restarts,
		}
		if opts.WorkDir == "" {
			// No volume: like a container writing to its own writable
			// layer, which is gone when the container is.
			dir, err := os.MkdirTemp("", "crawlersim-")
			if err != nil {
				fmt.Fprintf(c.Stdout, "creating working directory: %v\n", err)
				return 1
			}
			defer os.RemoveAll(dir)
			opts.WorkDir = dir
		}
		if tune != nil {
			tune(&opts)
		}
		if len(opts.Args) > 0 && opts.Args[0] == ProfileCommand {
			return runProfileBrowser(ctx, opts, podStorage{s: newStorage(opts.Env, opts.Hostname), dial: opts.Dial})
		}
		return Run(ctx, opts)
	}
}
