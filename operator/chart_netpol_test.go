package operator_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/trawlerhq/trawler/k8s"
	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
	"github.com/trawlerhq/trawler/operator"
	"github.com/trawlerhq/trawler/sandbox"
)

// The chart's crawler egress policy is tested here, not in k8s, because
// what it must select is the pods this package builds: their labels come
// from the operator's own pod functions, so renaming a label breaks this
// test rather than silently unprotecting the crawlers. The sandbox does
// not enforce NetworkPolicies, so the rendered object is what is checked.

// renderPolicy renders the chart with helm and the given values file
// content and returns the crawler egress policy, nil if there is none.
func renderPolicy(t *testing.T, values string) *networkingv1.NetworkPolicy {
	t.Helper()
	out, err := helmTemplate(t, values)
	if err != nil {
		t.Fatalf("helm template: %v\n%s", err, out)
	}
	var found *networkingv1.NetworkPolicy
	for _, doc := range strings.Split(string(out), "\n---\n") {
		var np networkingv1.NetworkPolicy
		if err := yaml.Unmarshal([]byte(doc), &np); err != nil {
			t.Fatalf("rendered document: %v\n%s", err, doc)
		}
		if np.Kind != "NetworkPolicy" {
			continue
		}
		if found != nil {
			t.Fatalf("more than one NetworkPolicy rendered")
		}
		found = &np
	}
	return found
}

func helmTemplate(t *testing.T, values string) ([]byte, error) {
	t.Helper()
	helm, err := sandbox.Bin("helm")
	if err != nil {
		t.Skipf("no helm: %v", err)
	}
	file := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(file, []byte(values), 0o644); err != nil {
		t.Fatal(err)
	}
	return exec.Command(helm, "template", "t", filepath.Join("..", "deploy", "helm", "trawler"),
		"--namespace", "trawler", "--values", file).CombinedOutput()
}

// crawlPods returns every pod the operator creates in the crawler
// namespace, by what it is: a crawl's crawlers and Redis at scale 2, and
// a profile browser, loading a profile and not.
func crawlPods() (crawlers, redis []*corev1.Pod) {
	cj := &trawlerv1.CrawlJob{
		ObjectMeta: metav1.ObjectMeta{Name: k8s.CrawlJobName("c1"), Namespace: "crawlers",
			Labels: map[string]string{k8s.LabelCrawl: "c1", k8s.LabelOrg: "o1"}},
		Spec: trawlerv1.CrawlJobSpec{ID: "c1", CID: "w1", OID: "o1", UserID: "u1", Scale: 2,
			ConfigMap: k8s.CrawlConfigMapName("c1"), StorageName: "default"},
	}
	cfg := operator.DefaultTestConfig()
	_, pods := operator.NewCrawlChildren(cj, cfg)
	for _, p := range pods {
		if p.Name == k8s.RedisName("c1") {
			redis = append(redis, p)
		} else {
			crawlers = append(crawlers, p)
		}
	}
	for _, file := range []string{"", "o1/profiles/p.tar.gz"} {
		pj := &trawlerv1.ProfileJob{
			ObjectMeta: metav1.ObjectMeta{Name: k8s.ProfileJobName("prf-1"), Namespace: "crawlers"},
			Spec: trawlerv1.ProfileJobSpec{ID: "prf-1", OID: "o1", UserID: "u1", StorageName: "default",
				StartURL: "https://example.com/", ProfileFilename: file},
		}
		crawlers = append(crawlers, operator.BrowserPod(pj, cfg))
	}
	return crawlers, redis
}

func TestChartCrawlerEgressPolicySelectsCrawlPods(t *testing.T) {
	np := renderPolicy(t, "")
	if np == nil {
		t.Fatal("no NetworkPolicy rendered by default")
	}
	if np.Namespace != "crawlers" || !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}) {
		t.Errorf("policy in %q with types %v, want the crawler namespace and Egress only", np.Namespace, np.Spec.PolicyTypes)
	}
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil {
		t.Fatal(err)
	}
	crawlers, redis := crawlPods()
	if len(crawlers) != 4 || len(redis) != 1 {
		t.Fatalf("built %d crawler/browser and %d Redis pods, want 4 and 1", len(crawlers), len(redis))
	}
	for _, p := range crawlers {
		if !sel.Matches(labels.Set(p.Labels)) {
			t.Errorf("the policy's selector %s misses pod %s (labels %v)", sel, p.Name, p.Labels)
		}
	}
	// The Redis pod serves the crawlers; limiting its egress is not this
	// policy's job, and the rule letting crawlers reach it must select it.
	for _, p := range redis {
		if sel.Matches(labels.Set(p.Labels)) {
			t.Errorf("the policy selects the Redis pod %s (labels %v)", p.Name, p.Labels)
		}
		if !egressReaches(t, np, p.Labels, 6379) {
			t.Errorf("no egress rule reaches the Redis pod %s on 6379", p.Name)
		}
	}
}

// egressReaches tells whether a rule of np lets traffic to a pod in the
// policy's namespace with these labels on port.
func egressReaches(t *testing.T, np *networkingv1.NetworkPolicy, podLabels map[string]string, port int32) bool {
	t.Helper()
	for _, rule := range np.Spec.Egress {
		if !slices.ContainsFunc(rule.Ports, func(p networkingv1.NetworkPolicyPort) bool {
			return p.Port != nil && p.Port.IntVal == port
		}) {
			continue
		}
		for _, peer := range rule.To {
			if peer.PodSelector == nil || peer.NamespaceSelector != nil {
				continue
			}
			sel, err := metav1.LabelSelectorAsSelector(peer.PodSelector)
			if err != nil {
				t.Fatal(err)
			}
			if sel.Matches(labels.Set(podLabels)) {
				return true
			}
		}
	}
	return false
}

func TestChartCrawlerEgressPolicyDeniesInternalRanges(t *testing.T) {
	np := renderPolicy(t, `crawler_network_policy_denied_cidrs: [100.96.0.0/11, "fd00:10:96::/112"]`)
	except := map[string][]string{}
	for _, rule := range np.Spec.Egress {
		for _, peer := range rule.To {
			if peer.IPBlock != nil {
				except[peer.IPBlock.CIDR] = peer.IPBlock.Except
			}
		}
	}
	for cidr, want := range map[string][]string{
		"0.0.0.0/0": {"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16", "100.64.0.0/10",
			"127.0.0.0/8", "100.96.0.0/11"},
		"::/0": {"fc00::/7", "fe80::/10", "::1/128", "fd00:10:96::/112"},
	} {
		got, ok := except[cidr]
		if !ok {
			t.Errorf("no ipBlock %s in the policy", cidr)
		}
		for _, w := range want {
			if !slices.Contains(got, w) {
				t.Errorf("ipBlock %s except %v lacks %s", cidr, got, w)
			}
		}
	}
}

func TestChartCrawlerEgressPolicyValues(t *testing.T) {
	if np := renderPolicy(t, "crawler_enable_network_policy: false"); np != nil {
		t.Error("the policy is rendered with crawler_enable_network_policy false")
	}
	// The bundled S3 server is allowed only when there is one.
	np := renderPolicy(t, `s3_local: false
storages: [{name: default, access_key: a, secret_key: s, bucket_name: crawls, endpoint_url: "https://s3.example/"}]
crawler_network_policy_additional_egress:
  - to: [{ipBlock: {cidr: 10.1.2.3/32}}]
    ports: [{port: 9000, protocol: TCP}]
`)
	last := np.Spec.Egress[len(np.Spec.Egress)-1]
	if len(last.To) != 1 || last.To[0].IPBlock == nil || last.To[0].IPBlock.CIDR != "10.1.2.3/32" ||
		len(last.Ports) != 1 || last.Ports[0].Port.IntVal != 9000 {
		t.Errorf("the additional egress rule did not pass through: %+v", last)
	}
	for _, rule := range np.Spec.Egress {
		for _, peer := range rule.To {
			if peer.NamespaceSelector != nil {
				t.Errorf("a rule reaches another namespace without s3_local: %+v", rule)
			}
		}
	}
	withS3 := renderPolicy(t, "")
	s3 := false
	for _, rule := range withS3.Spec.Egress {
		for _, peer := range rule.To {
			if peer.NamespaceSelector != nil && peer.PodSelector != nil &&
				peer.NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] == "trawler" &&
				peer.PodSelector.MatchLabels["app.kubernetes.io/name"] == "s3" &&
				len(rule.Ports) == 1 && rule.Ports[0].Port.IntVal == 7070 {
				s3 = true
			}
		}
	}
	if !s3 {
		t.Error("no egress rule reaches the bundled S3 server's pod on its port")
	}
	// The API's allow-list comes with the chart too, as trawler's setting.
	out, err := helmTemplate(t, `crawler_allowed_internal_cidrs: "10.1.0.0/16, fd00::1"`)
	if err != nil || !strings.Contains(string(out), `TRAWLER_CRAWLER_ALLOWED_INTERNAL_CIDRS: "10.1.0.0/16, fd00::1"`) {
		t.Errorf("crawler_allowed_internal_cidrs does not reach trawler's ConfigMap: %v", err)
	}
	// So does the allow-list of trawler's own requests (webhooks, org storages).
	out, err = helmTemplate(t, `outbound_allowed_cidrs: "10.2.0.0/16"`)
	if err != nil || !strings.Contains(string(out), `TRAWLER_OUTBOUND_ALLOWED_CIDRS: "10.2.0.0/16"`) {
		t.Errorf("outbound_allowed_cidrs does not reach trawler's ConfigMap: %v", err)
	}
	for _, bad := range []string{
		`crawler_network_policy_additional_egress: "10.0.0.0/8"`,
		`crawler_network_policy_additional_egress: [{to: "10.0.0.0/8"}]`,
		`crawler_network_policy_additional_egress: [{ipBlock: {cidr: 10.0.0.0/8}}]`,
		`crawler_network_policy_denied_cidrs: "10.0.0.0/8"`,
		`crawler_enable_network_policy: "yes"`,
		`crawler_allowed_internal_cidrs: [10.0.0.0/8]`,
		`outbound_allowed_cidrs: [10.0.0.0/8]`,
	} {
		if out, err := helmTemplate(t, bad); err == nil || !strings.Contains(string(out), "schema") {
			t.Errorf("values %s: helm template err %v, want a schema error\n%s", bad, err, out)
		}
	}
}
