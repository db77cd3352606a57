package k8s_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/trawlerhq/trawler/s3"
	"github.com/trawlerhq/trawler/sandbox"
)

// chartStorages is TRAWLER_STORAGES as trawler reads it.
func chartStorages(t *testing.T, objects map[string]renderedObject) map[string]s3.Config {
	t.Helper()
	var list []s3.Config
	raw := objects["Secret/trawler-secrets"].StringData["TRAWLER_STORAGES"]
	if err := json.Unmarshal([]byte(raw), &list); err != nil {
		t.Fatalf("TRAWLER_STORAGES %q: %v", raw, err)
	}
	out := map[string]s3.Config{}
	for _, c := range list {
		out[c.Name] = c
	}
	return out
}

// TestChartServesBundledBucketUnderData: browsers cannot reach the bundled
// S3 Service, so its bucket gets the access endpoint /data/ that trawler
// serves on its own origin, with links signed for the internal endpoint;
// the Ingress sends everything, /data/ included, to trawler.
func TestChartServesBundledBucketUnderData(t *testing.T) {
	objects := renderChart(t, "ingress: {enabled: true, host: crawls.example.org}\n")
	st := chartStorages(t, objects)["default"]
	if st.AccessEndpointURL != "/data/" || st.UseAccessForPresign == nil || *st.UseAccessForPresign ||
		st.EndpointURL != "http://trawler-s3.trawler.svc.cluster.local:7070/" {
		t.Errorf("bundled storage in TRAWLER_STORAGES: %+v", st)
	}
	// What trawler makes of it: relative links on its own origin.
	b, err := s3.New(st, s3.Options{})
	if err != nil {
		t.Fatal(err)
	}
	link, err := b.PresignGet(t.Context(), "org/crawl.wacz", time.Hour)
	if err != nil || !strings.HasPrefix(link, "/data/org/crawl.wacz?") || !strings.Contains(link, "X-Amz-Signature=") {
		t.Errorf("download link %q, %v: want /data/org/crawl.wacz?...", link, err)
	}
	crawler := objects["Secret/storage-default"].StringData
	if crawler["STORE_ACCESS_ENDPOINT_URL"] != "/data/" || crawler["STORE_USE_ACCESS_FOR_PRESIGN"] != "0" ||
		crawler["STORE_ENDPOINT_URL"] != "http://trawler-s3.trawler.svc.cluster.local:7070/btrix-data/" {
		t.Errorf("crawler storage Secret: %v", crawler)
	}

	var ingress struct {
		Spec struct {
			Rules []struct {
				HTTP struct {
					Paths []struct {
						Path    string `json:"path"`
						Backend struct {
							Service struct {
								Name string `json:"name"`
							} `json:"service"`
						} `json:"backend"`
					} `json:"paths"`
				} `json:"http"`
			} `json:"rules"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal([]byte(objects["Ingress/trawler"].text), &ingress); err != nil {
		t.Fatal(err)
	}
	if r := ingress.Spec.Rules; len(r) != 1 || len(r[0].HTTP.Paths) != 1 || r[0].HTTP.Paths[0].Path != "/" ||
		r[0].HTTP.Paths[0].Backend.Service.Name != "trawler" {
		t.Errorf("Ingress rules %+v: want the one path / to trawler", r)
	}
}

// TestChartStorageAccessEndpoints: only the bundled bucket is moved under
// /data/. An access endpoint of one's own is kept, an external storage
// keeps its links to its own host, and cors_allowed_origins reaches
// trawler as given.
func TestChartStorageAccessEndpoints(t *testing.T) {
	objects := renderChart(t, `storages:
  - {name: default, access_key: a, secret_key: s, bucket_name: btrix-data}
  - {name: public, access_key: a, secret_key: s, bucket_name: btrix-data, access_endpoint_url: "https://files.example.org/btrix-data/"}
  - name: external
    access_key: a
    secret_key: s
    bucket_name: crawls
    endpoint_url: "http://minio.storage:9000/"
    access_endpoint_url: "https://files.example.org/crawls/"
    cors_allowed_origins: ["https://crawls.example.org", "http://localhost:8000"]
`)
	st := chartStorages(t, objects)
	if got := st["default"].AccessEndpointURL; got != "/data/" {
		t.Errorf("bundled storage access endpoint %q, want /data/", got)
	}
	if got := st["public"]; got.AccessEndpointURL != "https://files.example.org/btrix-data/" || got.UseAccessForPresign != nil {
		t.Errorf("bundled storage with its own access endpoint became %+v", got)
	}
	ext := st["external"]
	if ext.AccessEndpointURL != "https://files.example.org/crawls/" || ext.UseAccessForPresign != nil ||
		!slices.Equal(ext.CORSAllowedOrigins, []string{"https://crawls.example.org", "http://localhost:8000"}) {
		t.Errorf("external storage in TRAWLER_STORAGES: %+v", ext)
	}
	if env := objects["Secret/storage-external"].StringData; env["STORE_USE_ACCESS_FOR_PRESIGN"] != "1" {
		t.Errorf("external storage's crawler Secret signs links for %v", env)
	}

	// Without the bundled server a storage keeps what it is given.
	objects = renderChart(t, `s3_local: false
storages:
  - {name: default, access_key: a, secret_key: s, bucket_name: crawls, endpoint_url: "https://s3.example.org/"}
`)
	if got := chartStorages(t, objects)["default"]; got.AccessEndpointURL != "" {
		t.Errorf("external storage got access endpoint %q", got.AccessEndpointURL)
	}
}

// TestChartRefusesBadStorageValues: the schema stops what trawler could
// not use, before anything is rendered.
func TestChartRefusesBadStorageValues(t *testing.T) {
	helm, err := sandbox.Bin("helm")
	if err != nil {
		t.Fatal(err)
	}
	const storage = "storages:\n  - {name: default, access_key: a, secret_key: s, bucket_name: btrix-data, "
	for _, tc := range []struct{ name, values, want string }{
		{"origins not a list", storage + "cors_allowed_origins: https://crawls.example.org}\n", "/storages/0/cors_allowed_origins"},
		{"origin not a string", storage + "cors_allowed_origins: [{url: x}]}\n", "/storages/0/cors_allowed_origins/0"},
		// Browsers send an origin without a slash: the rule would never match.
		{"origin with a slash", storage + "cors_allowed_origins: [\"https://crawls.example.org/\"]}\n", "/storages/0/cors_allowed_origins/0"},
		{"relative access endpoint", storage + "access_endpoint_url: data/}\n", "/storages/0/access_endpoint_url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "values.yaml")
			if err := os.WriteFile(file, []byte(tc.values), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(helm, "template", "t", filepath.Join("..", "deploy", "helm", "trawler"),
				"--namespace", "trawler", "--values", file).CombinedOutput()
			if err == nil {
				t.Fatalf("helm template accepted %q", tc.values)
			}
			if !strings.Contains(string(out), "values don't meet the specifications of the schema") ||
				!strings.Contains(string(out), tc.want) {
				t.Errorf("helm template of %q failed without the schema's message naming %s:\n%s", tc.values, tc.want, out)
			}
		})
	}
}
