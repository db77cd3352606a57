package operator_test

import (
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"
)

// TestChartSetsGOMEMLIMITUnderTheMemoryLimit renders the chart for a few
// memory sizes: trawler's container gets GOMEMLIMIT, in bytes, at 90% of
// its memory limit, so the Go runtime collects harder before the pod
// would be OOM-killed (10,000 crawls take most of a GiB).
func TestChartSetsGOMEMLIMITUnderTheMemoryLimit(t *testing.T) {
	for _, mem := range []string{"256Mi", "1Gi", "1.5Gi", "1500M", "2G", "3000000000"} {
		t.Run(mem, func(t *testing.T) {
			out, err := helmTemplate(t, "trawler_memory: \""+mem+"\"\n")
			if err != nil {
				t.Fatalf("helm template: %v\n%s", err, out)
			}
			var found bool
			for _, doc := range strings.Split(string(out), "\n---\n") {
				var d appsv1.Deployment
				if err := yaml.Unmarshal([]byte(doc), &d); err != nil {
					t.Fatalf("rendered document: %v\n%s", err, doc)
				}
				if d.Kind != "Deployment" {
					continue
				}
				for _, c := range d.Spec.Template.Spec.Containers {
					if c.Name != "trawler" {
						continue
					}
					found = true
					limit, ok := c.Resources.Limits["memory"]
					if !ok {
						t.Fatal("no memory limit")
					}
					var got string
					for _, e := range c.Env {
						if e.Name == "GOMEMLIMIT" {
							got = e.Value
						}
					}
					// The Go runtime reads a plain number as bytes.
					n, err := strconv.ParseInt(got, 10, 64)
					if want := limit.Value() * 9 / 10; err != nil || n != want {
						t.Errorf("GOMEMLIMIT %q for a %s limit, want %d (90%%)", got, limit.String(), want)
					}
				}
			}
			if !found {
				t.Fatal("no trawler container rendered")
			}
		})
	}
}
