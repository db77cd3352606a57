package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	corev1 "k8s.io/api/core/v1"

	"github.com/trawlerhq/trawler/sandbox/kubelet"
)

// ProcessImage describes a container image whose program is a real binary
// of this machine, run as a child process (see ProcessProgram).
type ProcessImage struct {
	// Entrypoint and Cmd are the image's ENTRYPOINT and CMD: a pod's
	// command replaces Entrypoint and its args replace Cmd, as for any
	// image.
	Entrypoint, Cmd []string
	// Files are the image's files: path in the image → file on this
	// machine (the binary, at least).
	Files map[string]string
	// Argv, when set, adjusts the final command line of a run.
	Argv func(c *kubelet.Container, argv []string) []string
}

// ProcessProgram runs a container of image as a child process, the way a
// container runtime would as far as the program can tell: in a root of its
// own (chroot, inside a user namespace when not run by root) holding the
// image's files, the container's volume mounts at their mount paths (the
// ServiceAccount token, ConfigMaps, Secrets: copied at start, so later
// changes are not seen), an /etc/hosts kept up to date with the cluster's
// names, and the container's env, user and group. It shares the host's
// network: it reaches other pods through /etc/hosts, and should listen on
// its pod's address. Deleting the pod sends SIGTERM, and SIGKILL once the
// grace period is over; the exit code is the container's.
func ProcessProgram(image ProcessImage) kubelet.Program {
	return func(ctx context.Context, c *kubelet.Container) int {
		cmd, err := image.command(c)
		if err != nil {
			fmt.Fprintf(c.Stdout, "creating container: %v\n", err)
			return 128
		}
		root := cmd.SysProcAttr.Chroot
		hostsDone := make(chan struct{})
		defer close(hostsDone)
		go keepHostsFile(filepath.Join(root, "etc", "hosts"), c, hostsDone)
		return runProcess(ctx, c, cmd)
	}
}

// command prepares the container's root folder and its process.
func (image ProcessImage) command(c *kubelet.Container) (*exec.Cmd, error) {
	root := filepath.Join(c.Dir, "rootfs")
	for _, d := range []string{"etc", "tmp"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			return nil, err
		}
	}
	if err := os.Chmod(filepath.Join(root, "tmp"), 0o1777); err != nil {
		return nil, err
	}
	for inImage, host := range image.Files {
		if err := linkOrCopy(host, filepath.Join(root, inImage)); err != nil {
			return nil, fmt.Errorf("image file %s: %w", inImage, err)
		}
	}
	for mountPath, host := range c.Mounts {
		if err := copyTree(host, filepath.Join(root, mountPath)); err != nil {
			return nil, fmt.Errorf("volume mount %s: %w", mountPath, err)
		}
	}
	etc := map[string]string{
		"nsswitch.conf": "hosts: files dns\n",
		"hostname":      c.Hostname + "\n",
		"resolv.conf":   hostNameservers(),
	}
	hosts, _ := c.Hosts()
	etc["hosts"] = string(hosts)
	for name, content := range etc {
		if err := os.WriteFile(filepath.Join(root, "etc", name), []byte(content), 0o644); err != nil {
			return nil, err
		}
	}

	argv := image.Entrypoint
	args := image.Cmd
	if len(c.Command) > 0 {
		argv, args = c.Command, nil
	}
	if len(c.CommandArgs) > 0 {
		args = c.CommandArgs
	}
	argv = append(slices.Clone(argv), args...)
	if image.Argv != nil {
		argv = image.Argv(c, argv)
	}
	if len(argv) == 0 {
		return nil, errors.New("no command: the pod names none and the image has no entrypoint")
	}

	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = containerEnviron(c)
	cmd.Dir = "/"
	if wd := containerSpec(c).WorkingDir; wd != "" {
		cmd.Dir = wd
	}
	uid, gid := runAs(c)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Chroot:     root,
		Credential: &syscall.Credential{Uid: uid, Gid: gid},
		// The container's user is this process's user outside: it owns
		// every file of the root, as a runtime's user namespace does.
		Cloneflags:  syscall.CLONE_NEWUSER,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: int(uid), HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: int(gid), HostID: os.Getgid(), Size: 1}},
	}
	return cmd, nil
}

// runProcess starts cmd with the container's log as its output and waits
// for it: the container's SIGTERM (ctx) and SIGKILL (Killed) go to its
// process group.
func runProcess(ctx context.Context, c *kubelet.Container, cmd *exec.Cmd) int {
	cmd.Stdout, cmd.Stderr = c.Stdout, c.Stdout
	err := spawn(cmd)
	if err != nil && cmd.SysProcAttr != nil && cmd.SysProcAttr.Cloneflags&syscall.CLONE_NEWUSER != 0 && os.Getuid() == 0 {
		// No user namespaces here; root can chroot without one.
		attr := cmd.SysProcAttr
		attr.Cloneflags, attr.UidMappings, attr.GidMappings = 0, nil, nil
		cmd = rebuild(cmd)
		err = spawn(cmd)
	}
	if err != nil {
		fmt.Fprintf(c.Stdout, "starting %s: %v\n", cmd.Path, err)
		return 128
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	pgid := -cmd.Process.Pid
	terminating := ctx.Done()
	for {
		select {
		case err := <-exited:
			return exitCode(err)
		case <-terminating:
			_ = syscall.Kill(pgid, syscall.SIGTERM)
			terminating = nil
		case <-c.Killed:
			_ = syscall.Kill(pgid, syscall.SIGKILL)
			return exitCode(<-exited)
		}
	}
}

// rebuild copies a Cmd that failed to start, which cannot be started again.
func rebuild(cmd *exec.Cmd) *exec.Cmd {
	again := exec.Command(cmd.Path, cmd.Args[1:]...)
	again.Env, again.Dir, again.SysProcAttr = cmd.Env, cmd.Dir, cmd.SysProcAttr
	again.Stdout, again.Stderr = cmd.Stdout, cmd.Stderr
	return again
}

// exitCode is a container's exit code: the process's, or 128 + the signal
// that ended it.
func exitCode(err error) int {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return exit.ExitCode()
	}
	if err != nil {
		return 128
	}
	return 0
}

// keepHostsFile rewrites path whenever the cluster's names change, until
// done closes. It replaces the file by rename, so a reader never sees half
// of it; Go's resolver rereads it within five seconds.
func keepHostsFile(path string, c *kubelet.Container, done <-chan struct{}) {
	var last []byte
	for {
		hosts, changed := c.Hosts()
		if !slices.Equal(hosts, last) {
			tmp := path + ".tmp"
			if err := os.WriteFile(tmp, hosts, 0o644); err == nil && os.Rename(tmp, path) == nil {
				last = hosts
			}
		}
		select {
		case <-changed:
		case <-done:
			return
		}
	}
}

// containerEnviron is the process environment: the container's env and
// HOSTNAME, as a runtime sets it, and a PATH when none is given.
func containerEnviron(c *kubelet.Container) []string {
	env := map[string]string{"HOSTNAME": c.Hostname, "PATH": "/usr/local/bin:/usr/bin:/bin"}
	for k, v := range c.Env {
		env[k] = v
	}
	var out []string
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	slices.Sort(out)
	return out
}

// containerSpec finds the container's spec in its pod.
func containerSpec(c *kubelet.Container) *corev1.Container {
	for i := range c.Pod.Spec.Containers {
		if c.Pod.Spec.Containers[i].Name == c.Name {
			return &c.Pod.Spec.Containers[i]
		}
	}
	return &corev1.Container{}
}

// runAs is the user and group the container runs as: its security
// context's, else the pod's, else root.
func runAs(c *kubelet.Container) (uid, gid uint32) {
	var u, g *int64
	if psc := c.Pod.Spec.SecurityContext; psc != nil {
		u, g = psc.RunAsUser, psc.RunAsGroup
	}
	if sc := containerSpec(c).SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			u = sc.RunAsUser
		}
		if sc.RunAsGroup != nil {
			g = sc.RunAsGroup
		}
	}
	if u != nil {
		uid = uint32(*u)
	}
	if g != nil {
		gid = uint32(*g)
	}
	return uid, gid
}

// hostNameservers is a resolv.conf naming this machine's DNS servers, so
// names outside the cluster resolve as they would through cluster DNS.
func hostNameservers() string {
	data, err := os.ReadFile("/etc/resolv.conf")
	if err != nil {
		return ""
	}
	var b strings.Builder
	for line := range strings.Lines(string(data)) {
		if strings.HasPrefix(strings.TrimSpace(line), "nameserver") {
			b.WriteString(line)
		}
	}
	return b.String()
}

// linkOrCopy puts the file src at dst: a hard link when both are on one
// file system, else a copy.
func linkOrCopy(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	return copyFile(src, dst)
}

// copyTree copies a file or a folder (with its files and subfolders) to dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		return copyFile(path, target)
	})
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, info.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
