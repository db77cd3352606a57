package sandbox

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/trawlerhq/trawler/s3"
)

// S3 is a real S3 server, the Versity S3 Gateway with its posix backend,
// on a loopback port: one account, and each bucket a folder under DataDir,
// so tests can also look at the stored files directly. It checks SigV4
// strictly, as a cloud provider does.
type S3 struct {
	*Process
	Port      int
	AccessKey string
	SecretKey string
	DataDir   string
}

// S3ClusterHost is the name pods and trawler reach the sandbox's S3
// server by (through the sandbox DNS, any port): like an in-cluster
// object store, it differs from the loopback URL a browser uses.
const S3ClusterHost = "local-s3.default.svc.cluster.local"

// StartS3 starts versitygw with its buckets and log in dir and waits
// until it answers HTTP.
func StartS3(ctx context.Context, dir string) (*S3, error) {
	path, err := Bin("versitygw")
	if err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, fmt.Errorf("creating s3 data dir: %w", err)
	}
	s := &S3{Port: port, AccessKey: "sandbox-access", SecretKey: "sandbox-secret-" + strconv.Itoa(port), DataDir: data}
	s.Process = &Process{
		Name: "versitygw",
		Path: path,
		Args: []string{"--access", s.AccessKey, "--secret", s.SecretKey, "--quiet",
			"--port", "127.0.0.1:" + strconv.Itoa(port), "posix", data},
		Dir:     dir,
		LogPath: filepath.Join(dir, "versitygw.log"),
	}
	if err := s.Restart(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Restart starts the server again (same port, same buckets) after Stop or
// Kill, and waits until it answers.
func (s *S3) Restart(ctx context.Context) error {
	if err := s.Process.Start(); err != nil {
		return err
	}
	// Any answer, even "access denied", means it serves.
	return WaitFor(ctx, 30*time.Second, 20*time.Millisecond, s.Process,
		httpAnswers(s.URL(), &http.Client{Timeout: time.Second}))
}

// URL is the server's loopback URL, http://127.0.0.1:<port>/.
func (s *S3) URL() string { return fmt.Sprintf("http://127.0.0.1:%d/", s.Port) }

// Storage describes bucket on this server as trawler's configuration
// would: reached at S3ClusterHost by pods and trawler, and at the
// loopback URL by browsers (and curl), which the download links are
// signed for.
func (s *S3) Storage(name, bucket string) s3.Config {
	return s3.Config{
		Name: name, AccessKey: s.AccessKey, SecretKey: s.SecretKey, BucketName: bucket,
		EndpointURL:       "http://" + S3ClusterHost + ":9000/",
		AccessEndpointURL: s.URL() + bucket + "/",
	}
}
