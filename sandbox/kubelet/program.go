package kubelet

import (
	"context"
	"io"
	"net"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// Program is what a container runs; it returns the exit code.
//
// ctx is cancelled when the pod is deleted (SIGTERM); Container.Killed
// closes when terminationGracePeriodSeconds have passed after that
// (SIGKILL), and the kubelet then reports exit code 137 without waiting
// for the program. A program should return soon after either.
type Program func(ctx context.Context, c *Container) int

// Container is one run of a container, as its program sees it.
type Container struct {
	Pod   *corev1.Pod // the pod when this run started (read-only)
	Name  string      // container name
	Image string      // image as written in the pod spec
	Args  []string    // command followed by args, $(VAR) expanded
	// Command and CommandArgs are the spec's command and args apart,
	// $(VAR) expanded; an empty one means the image's default.
	Command, CommandArgs []string
	Env                  map[string]string // env + envFrom resolved (ConfigMaps, Secrets, fieldRefs)
	Hostname             string            // spec.hostname, else the pod name
	PodIP                string            // the pod's own loopback address
	Mounts               map[string]string // mountPath -> local path (file for subPath mounts)
	// Dir is an empty folder for this run, removed with the pod.
	Dir      string
	Stdout   io.Writer // the container log
	Restarts int       // restartCount before this run
	// Dial resolves the sandbox's cluster DNS names (see DNS).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// Hosts renders the pod's /etc/hosts (Kubelet.Hosts) and returns a
	// channel closed when it may have changed.
	Hosts func() (hosts []byte, changed <-chan struct{})
	// Killed closes when the grace period ran out (SIGKILL).
	Killed <-chan struct{}
}

// registry maps images to programs.
type registry struct {
	mu       sync.RWMutex
	programs map[string]Program
}

func (r *registry) register(image string, p Program) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.programs == nil {
		r.programs = make(map[string]Program)
	}
	r.programs[image] = p
}

// lookup finds the program for image by exact match, then by the image
// without tag or digest, then by the repository's last path element (so
// "redis" serves "docker.io/library/redis:7.2"). Unknown images get
// waitForStop.
func (r *registry) lookup(image string) Program {
	r.mu.RLock()
	defer r.mu.RUnlock()
	repo := imageRepository(image)
	for _, name := range []string{image, repo, repo[strings.LastIndexByte(repo, '/')+1:]} {
		if p, ok := r.programs[name]; ok {
			return p
		}
	}
	return waitForStop
}

// imageRepository strips the tag and digest from an image reference. A
// colon only starts a tag after the last slash; before it, it is a
// registry port.
func imageRepository(image string) string {
	repo, _, _ := strings.Cut(image, "@")
	if i := strings.LastIndexByte(repo, ':'); i > strings.LastIndexByte(repo, '/') {
		repo = repo[:i]
	}
	return repo
}

// waitForStop is the program of images nobody registered: it runs until
// the pod is deleted and then exits cleanly.
func waitForStop(ctx context.Context, _ *Container) int {
	<-ctx.Done()
	return 0
}
