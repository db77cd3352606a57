package e2etest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Dev is a running `trawler dev`, the binary as a user runs it.
type Dev struct {
	cmd *exec.Cmd
	// exited is closed once the process ended, with how in exitErr.
	exited  chan struct{}
	exitErr error
	// Env is what it wrote to its env file: TRAWLER_API_URL and the rest.
	Env map[string]string
}

// StartDev runs `trawler dev` (the binary bin) with its files in dir, its
// API on a free port and nodes simulated nodes, its output to out, and
// returns once its API answers /readyz. flags are more of its flags. On
// error it is stopped already.
func StartDev(bin, dir string, nodes int, out io.Writer, flags ...string) (*Dev, error) {
	args := append([]string{"dev", "--dir", dir, "--api.listen", "127.0.0.1:0", "--nodes", strconv.Itoa(nodes)}, flags...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting trawler dev: %w", err)
	}
	d := &Dev{cmd: cmd, exited: make(chan struct{})}
	go func() {
		d.exitErr = cmd.Wait()
		close(d.exited)
	}()
	err := d.waitForEnv(filepath.Join(dir, "env"))
	if err == nil {
		err = WaitReady(d.APIURL()+"/readyz", 2*time.Minute, d.exited)
	}
	if err != nil {
		d.Kill()
		return nil, fmt.Errorf("trawler dev: %w", err)
	}
	return d, nil
}

// APIURL is where the dashboard and the API answer.
func (d *Dev) APIURL() string { return d.Env["TRAWLER_API_URL"] }

// Interrupt sends Ctrl-C, as a user stops `trawler dev`, and waits up to
// a minute for it to exit; it returns how it exited.
func (d *Dev) Interrupt() error {
	if err := d.cmd.Process.Signal(syscall.SIGINT); err != nil {
		return fmt.Errorf("interrupting trawler dev: %w", err)
	}
	select {
	case <-d.exited:
		if d.exitErr != nil {
			return fmt.Errorf("trawler dev exited with %w after SIGINT", d.exitErr)
		}
		return nil
	case <-time.After(60 * time.Second):
		return errors.New("trawler dev did not exit within 60s of SIGINT")
	}
}

// Kill ends the process at once, if it still runs, and waits for it.
func (d *Dev) Kill() {
	_ = d.cmd.Process.Kill()
	<-d.exited
}

// waitForEnv reads the env file trawler dev writes once it serves into
// d.Env.
func (d *Dev) waitForEnv(path string) error {
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		select {
		case <-d.exited:
			return fmt.Errorf("exited early (%v)", d.exitErr)
		case <-time.After(200 * time.Millisecond):
		}
		env, err := readEnv(path)
		if err == nil && env["TRAWLER_API_URL"] != "" {
			d.Env = env
			return nil
		}
	}
	return fmt.Errorf("%s not written within 3 minutes", path)
}

// readEnv reads the exports of an env file as devstack.WriteEnv writes
// them: export NAME="quoted value".
func readEnv(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "export "), "=")
		if !ok {
			continue
		}
		if unquoted, err := strconv.Unquote(v); err == nil {
			v = unquoted
		}
		env[k] = v
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return env, nil
}
