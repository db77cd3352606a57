package sandbox

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"

	"github.com/trawlerhq/trawler/sandbox/kubelet"
)

// TrawlerImage is the repository of trawler's own image (the Dockerfile at
// the repository root), as the Helm chart names it by default.
const TrawlerImage = "trawler"

// TrawlerProgram runs trawler's image with bin as its /trawler binary
// (ENTRYPOINT ["/trawler"], CMD ["serve"]), through ProcessProgram. One
// change to what the pod asks: `serve` listens on the pod's address rather
// than on every address, because pods here share the host's network and
// two replicas would otherwise fight over the port.
func TrawlerProgram(bin string) kubelet.Program {
	return ProcessProgram(ProcessImage{
		Entrypoint: []string{"/trawler"},
		Cmd:        []string{"serve"},
		Files:      map[string]string{"/trawler": bin},
		Argv: func(c *kubelet.Container, argv []string) []string {
			if !slices.Contains(argv, "serve") {
				return argv
			}
			port := "8000"
			if _, p, err := net.SplitHostPort(c.Env["TRAWLER_API_LISTEN"]); err == nil && p != "" {
				port = p
			}
			return append(argv, "--api.listen="+net.JoinHostPort(c.PodIP, port))
		},
	})
}

// MongoImage is the repository of MongoDB's official image.
const MongoImage = "mongo"

// mongoPort is the port mongod serves by default.
const mongoPort = "27017"

// MongoProgram stands in for MongoDB's image: each run starts mongotestd
// (the sandbox's MongoDB-wire server) on the pod's address and port 27017,
// with its data in the volume mounted at /data/db, where the image keeps
// it, so the data survives pod restarts on the same PVC. The container's
// command, args and env (such as MONGO_INITDB_ROOT_USERNAME) are not used:
// the server has no users and accepts any credentials given with the PLAIN
// mechanism.
func MongoProgram() kubelet.Program {
	return func(ctx context.Context, c *kubelet.Container) int {
		path, err := Bin("mongotestd")
		if err != nil {
			fmt.Fprintln(c.Stdout, err)
			return 1
		}
		dir := c.Mounts["/data/db"]
		if dir == "" {
			dir = c.Dir
		}
		cmd := exec.Command(path, "-listen", net.JoinHostPort(c.PodIP, mongoPort), "-dir", dir)
		cmd.Env = os.Environ()
		return runProcess(ctx, c, cmd)
	}
}
