package release

import (
	"context"
	"encoding/json"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/types"
	"sigs.k8s.io/yaml"

	"github.com/trawlerhq/trawler/app"
	"github.com/trawlerhq/trawler/k8s"
)

// No Docker engine runs where the tests run, so the compose setup is
// checked as far as it can be without one: the Compose specification's own
// loader must accept the file, and the services must fit together (ports,
// addresses, volumes, configuration keys) and with the kind cluster.

// testNodeIP stands for the kind node's address on the docker network.
const testNodeIP = "172.18.0.2"

func loadCompose(t *testing.T) *types.Project {
	t.Helper()
	// make kind-up gives the control-plane node's address.
	opts, err := cli.NewProjectOptions([]string{filepath.Join(root, "deploy", "compose.yaml")},
		cli.WithEnv([]string{"KIND_NODE_IP=" + testNodeIP}), cli.WithResolvedPaths(true))
	if err != nil {
		t.Fatal(err)
	}
	project, err := opts.LoadProject(context.Background())
	if err != nil {
		t.Fatalf("compose-go rejects deploy/compose.yaml: %v", err)
	}
	return project
}

type kindCluster struct {
	Name       string `json:"name"`
	Networking struct {
		ServiceSubnet string `json:"serviceSubnet"`
	} `json:"networking"`
	Nodes []struct {
		Role              string `json:"role"`
		ExtraPortMappings []struct {
			ContainerPort int    `json:"containerPort"`
			HostPort      int    `json:"hostPort"`
			ListenAddress string `json:"listenAddress"`
		} `json:"extraPortMappings"`
	} `json:"nodes"`
}

func loadKindCluster(t *testing.T) kindCluster {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "deploy", "kind", "cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c kindCluster
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestComposeOnKind(t *testing.T) {
	project := loadCompose(t)
	kind := loadKindCluster(t)
	if kind.Name == "" || len(kind.Nodes) == 0 || kind.Nodes[0].Role != "control-plane" {
		t.Fatalf("kind cluster: %+v", kind)
	}
	node := "container:" + kind.Name + "-control-plane"

	for _, name := range []string{"trawler", "mongo", "s3"} {
		svc, ok := project.Services[name]
		if !ok {
			t.Fatalf("no service %s", name)
		}
		// Sharing the node's network namespace is what lets trawler reach
		// pods and Services, and crawler pods reach the S3 server.
		if svc.NetworkMode != node {
			t.Errorf("service %s: network_mode %q, want %q", name, svc.NetworkMode, node)
		}
	}
	trawler := project.Services["trawler"]
	if trawler.Build == nil || trawler.Build.Context != root || trawler.Build.Dockerfile != "Dockerfile" {
		t.Errorf("trawler must build from the repository's Dockerfile: %+v", trawler.Build)
	}
	for _, dep := range []string{"mongo", "s3"} {
		if _, ok := trawler.DependsOn[dep]; !ok {
			t.Errorf("trawler does not depend on %s", dep)
		}
	}

	env := map[string]string{}
	for k, v := range trawler.Environment {
		if v == nil {
			t.Errorf("trawler env %s has no value", k)
			continue
		}
		env[k] = *v
	}
	known := configKeysAsEnv(t)
	for k := range env {
		if strings.HasPrefix(k, "TRAWLER_") && !known[k] {
			t.Errorf("trawler env %s is no configuration key", k)
		}
	}

	// The channels are a list trawler accepts, default among them.
	var channels k8s.CrawlerChannels
	if err := json.Unmarshal([]byte(env["TRAWLER_CRAWLER_CHANNELS"]), &channels); err != nil || channels.Validate() != nil {
		t.Errorf("TRAWLER_CRAWLER_CHANNELS %q: %v, %v", env["TRAWLER_CRAWLER_CHANNELS"], err, channels.Validate())
	}

	// The API listens on a port the node publishes on the host.
	_, apiPort, err := net.SplitHostPort(env["TRAWLER_API_LISTEN"])
	if err != nil {
		t.Fatalf("TRAWLER_API_LISTEN %q: %v", env["TRAWLER_API_LISTEN"], err)
	}
	published := map[string]bool{}
	for _, m := range kind.Nodes[0].ExtraPortMappings {
		published[strconv.Itoa(m.ContainerPort)] = m.HostPort > 0 && (m.ListenAddress == "127.0.0.1" || m.ListenAddress == "")
	}
	if !published[apiPort] {
		t.Errorf("the API port %s is not published on the host by the kind control-plane node", apiPort)
	}

	// MongoDB: trawler's URI names mongo's port on the shared loopback.
	mongoURI, err := url.Parse(env["TRAWLER_MONGO_URI"])
	if err != nil || mongoURI.Hostname() != "127.0.0.1" {
		t.Errorf("TRAWLER_MONGO_URI %q should name 127.0.0.1 (the shared network namespace)", env["TRAWLER_MONGO_URI"])
	}
	if cmd := strings.Join(project.Services["mongo"].Command, " "); !strings.Contains(cmd, "--port "+mongoURI.Port()) {
		t.Errorf("mongo's command %q does not serve port %s of TRAWLER_MONGO_URI", cmd, mongoURI.Port())
	}

	// The S3 server stays inside the node: browsers get files through
	// trawler, under /data/ on the API's port.
	s3 := project.Services["s3"]
	_, s3Port, err := net.SplitHostPort(valueOf(s3.Environment["VGW_PORT"]))
	if err != nil {
		t.Fatalf("s3 VGW_PORT %q: %v", valueOf(s3.Environment["VGW_PORT"]), err)
	}
	if published[s3Port] {
		t.Errorf("the node publishes the S3 port %s on the host; downloads go through trawler's /data/", s3Port)
	}

	// The storage: crawlers upload to the S3 server at the node's address,
	// browsers download from the API's origin under /data/, which trawler
	// passes on to that server: same-origin links.
	var storages []struct {
		Name              string `json:"name"`
		EndpointURL       string `json:"endpoint_url"`
		AccessEndpointURL string `json:"access_endpoint_url"`
		BucketName        string `json:"bucket_name"`
	}
	if err := json.Unmarshal([]byte(env["TRAWLER_STORAGES"]), &storages); err != nil || len(storages) != 1 {
		t.Fatalf("TRAWLER_STORAGES %q: %v", env["TRAWLER_STORAGES"], err)
	}
	st := storages[0]
	if u, err := url.Parse(st.EndpointURL); err != nil || u.Hostname() != testNodeIP || u.Port() != s3Port {
		t.Errorf("storage endpoint %q is not the S3 server on the node's address", st.EndpointURL)
	}
	if st.AccessEndpointURL != "/data/" {
		t.Errorf("storage access endpoint %q: want /data/, on the API's origin", st.AccessEndpointURL)
	}
	if st.BucketName != valueOf(s3.Environment["BUCKET_NAME"]) {
		t.Errorf("storage bucket %q is not the one the S3 service creates (%q)", st.BucketName, valueOf(s3.Environment["BUCKET_NAME"]))
	}

	// Mounts: the kubeconfig and resolver trawler needs, and named
	// volumes for the stores' data.
	mounts := map[string]types.ServiceVolumeConfig{}
	for _, v := range trawler.Volumes {
		mounts[v.Target] = v
	}
	if kc := mounts[env["TRAWLER_KUBERNETES_KUBECONFIG"]]; kc.Source == "" || !kc.ReadOnly {
		t.Errorf("TRAWLER_KUBERNETES_KUBECONFIG %q is not a read-only mount", env["TRAWLER_KUBERNETES_KUBECONFIG"])
	}
	resolv := mounts["/etc/resolv.conf"]
	data, err := os.ReadFile(resolv.Source)
	if err != nil {
		t.Fatalf("trawler's /etc/resolv.conf: %v", err)
	}
	if m := regexp.MustCompile(`(?m)^nameserver (\S+)`).FindSubmatch(data); m == nil || !inSubnet(string(m[1]), kind.Networking.ServiceSubnet) {
		t.Errorf("resolv.conf's nameserver is not in the kind service subnet %q:\n%s", kind.Networking.ServiceSubnet, data)
	}
	for svc, target := range map[string]string{"mongo": "/data/db", "s3": valueOf(s3.Environment["VGW_BACKEND_ARG"])} {
		found := false
		for _, v := range project.Services[svc].Volumes {
			if v.Target == target && v.Type == types.VolumeTypeVolume {
				_, declared := project.Volumes[v.Source]
				found = declared
			}
		}
		if !found {
			t.Errorf("service %s keeps its data at %s without a named volume", svc, target)
		}
	}
}

// TestDockerfileBuildsLikeMake: the image's binary is built with the same
// go build flags and environment as `make build`.
func TestDockerfileBuildsLikeMake(t *testing.T) {
	makefile, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	dockerfile, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	ldflags := regexp.MustCompile(`(?m)^LDFLAGS := (.*)$`).FindSubmatch(makefile)
	build := regexp.MustCompile(`(?m)^\t\$\(GO\) build (.*) -o bin/trawler \.$`).FindSubmatch(makefile)
	cgo := regexp.MustCompile(`(?m)^export CGO_ENABLED := (\d)$`).FindSubmatch(makefile)
	if ldflags == nil || build == nil || cgo == nil {
		t.Fatal("Makefile: no LDFLAGS, build rule or CGO_ENABLED export found")
	}
	want := strings.ReplaceAll(string(build[1]), "'$(LDFLAGS)'", `"`+string(ldflags[1])+`"`)
	want = "CGO_ENABLED=" + string(cgo[1]) + " go build " + strings.ReplaceAll(want, "$(VERSION)", "${VERSION}")
	run := regexp.MustCompile(`(?m)^RUN (CGO_ENABLED=\d go build .*) -o /out/trawler \.$`).FindSubmatch(dockerfile)
	if run == nil {
		t.Fatal("Dockerfile: no `RUN CGO_ENABLED=... go build ... -o /out/trawler .` line")
	}
	if string(run[1]) != want {
		t.Errorf("Dockerfile builds with\n  %s\nmake build with\n  %s", run[1], want)
	}
}

func valueOf(v *string) string {
	if v == nil {
		return ""
	}
	return *v
}

// configKeysAsEnv lists the TRAWLER_* variable of every configuration key.
func configKeysAsEnv(t *testing.T) map[string]bool {
	t.Helper()
	known := map[string]bool{}
	for _, key := range app.Keys() {
		known["TRAWLER_"+strings.ToUpper(strings.ReplaceAll(key, ".", "_"))] = true
	}
	return known
}

func inSubnet(ip, cidr string) bool {
	_, n, err := net.ParseCIDR(cidr)
	return err == nil && n.Contains(net.ParseIP(ip))
}
