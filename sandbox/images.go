package sandbox

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"

	"github.com/trawlerhq/trawler/sandbox/kubelet"
)

// TrawlerImage is the repository of trawler's own image (the Dockerfile at
// the repository root), as the Helm chart names it by default.
const TrawlerImage = "trawler"

// TrawlerProgram runs trawler's image with bin as its /trawler binary
// (ENTRYPOINT ["/trawler"], CMD ["serve"]), through ProcessProgram. One
// change to what the pod asks: `serve` listens (API and metrics) on the
// pod's address rather than on every address, because pods here share the
// host's network and two replicas would otherwise fight over the ports.
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
			argv = append(argv, "--api.listen="+net.JoinHostPort(c.PodIP, port))
			// The chart serves /metrics on a port of its own, which pods
			// on one host must each bind on their own address too.
			if _, p, err := net.SplitHostPort(c.Env["TRAWLER_METRICS_LISTEN"]); err == nil && p != "" {
				argv = append(argv, "--metrics.listen="+net.JoinHostPort(c.PodIP, p))
			}
			return argv
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

// S3Image is the repository of Versity S3 Gateway's image, the chart's
// bundled S3 server.
const S3Image = "versitygw"

// S3Program stands in for Versity S3 Gateway's image with the sandbox's
// versitygw binary, as the image's entrypoint runs it: the backend and its
// folder from VGW_BACKEND and VGW_BACKEND_ARG (a mount path, mapped to the
// volume behind it), the keys and other settings from the container's
// ROOT_* and VGW_* variables, which versitygw reads itself. It listens on
// the pod's address at VGW_PORT's port (default 7070). The chart creates
// the bucket's folder with a shell line before the entrypoint, which
// cannot run here; the program creates the folder named by BUCKET_NAME
// instead.
func S3Program() kubelet.Program {
	return func(ctx context.Context, c *kubelet.Container) int {
		path, err := Bin("versitygw")
		if err != nil {
			fmt.Fprintln(c.Stdout, err)
			return 1
		}
		backend, dir := c.Env["VGW_BACKEND"], c.Env["VGW_BACKEND_ARG"]
		local := c.Mounts[dir]
		if backend != "posix" || local == "" {
			fmt.Fprintf(c.Stdout, "the sandbox runs only the posix backend on a mounted folder (VGW_BACKEND=%q, VGW_BACKEND_ARG=%q)\n", backend, dir)
			return 1
		}
		if bucket := c.Env["BUCKET_NAME"]; bucket != "" {
			if err := os.MkdirAll(filepath.Join(local, bucket), 0o755); err != nil {
				fmt.Fprintln(c.Stdout, err)
				return 1
			}
		}
		port := "7070"
		if _, p, err := net.SplitHostPort(c.Env["VGW_PORT"]); err == nil && p != "" {
			port = p
		}
		cmd := exec.Command(path, "posix", local)
		cmd.Env = containerEnviron(c)
		cmd.Env = append(cmd.Env, "VGW_PORT="+net.JoinHostPort(c.PodIP, port))
		return runProcess(ctx, c, cmd)
	}
}
