package release

import (
	"bufio"
	"context"
	"encoding/json"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
)

// unusedGrants are the (verb, resource) pairs the chart grants that a
// crawl does not use, each with the reason it is granted anyway.
var unusedGrants = map[string]string{
	// Informers list first where the apiserver cannot stream their
	// initial state through the watch; this one can.
	"list configmaps":                           "informers list first on clusters without streaming lists",
	"list crawljobs.trawler.dev":                "informers list first on clusters without streaming lists",
	"list persistentvolumeclaims":               "informers list first on clusters without streaming lists",
	"list pods":                                 "informers list first on clusters without streaming lists",
	"list profilejobs.trawler.dev":              "informers list first on clusters without streaming lists",
	"get crawljobs.trawler.dev":                 "the API reads a CrawlJob back when a retried start finds it exists",
	"patch crawljobs.trawler.dev":               "the API patches a CrawlJob to scale or stop its crawl",
	"delete configmaps":                         "the API removes a workflow's ConfigMap when creating its CrawlJob failed",
	"patch events":                              "the event recorder patches an Event that repeats",
	"get pods/log":                              "only for failed crawls: crash loops, or log_failed_crawl_lines > 0",
	"list pods.metrics.k8s.io":                  "only where the cluster serves metrics.k8s.io; the sandbox does not",
	"update crawljobs.trawler.dev/finalizers":   "checked only by OwnerReferencesPermissionEnforcement admission",
	"update profilejobs.trawler.dev/finalizers": "checked only by OwnerReferencesPermissionEnforcement admission",
	// An org's own storage (PATCH /orgs/{oid}/storage) is not part of a crawl.
	"create secrets": "an org's own storage Secret",
	"get secrets":    "an org's own storage Secret, when it exists already",
	"update secrets": "an org's own storage Secret, when it exists already",
	"delete secrets": "an org's own storage Secret, when the org goes back to a configured one",
	// Browser profiles are ProfileJobs, which a crawl does not use.
	"get profilejobs.trawler.dev":           "browser profiles",
	"create profilejobs.trawler.dev":        "browser profiles",
	"patch profilejobs.trawler.dev":         "browser profiles",
	"delete profilejobs.trawler.dev":        "browser profiles",
	"update profilejobs.trawler.dev/status": "browser profiles",
}

// auditEvent is the part of an audit.k8s.io/v1 Event the RBAC check reads.
type auditEvent struct {
	AuditID    string `json:"auditID"`
	Verb       string `json:"verb"`
	RequestURI string `json:"requestURI"`
	User       struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		APIGroup    string `json:"apiGroup"`
		Namespace   string `json:"namespace"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	Annotations map[string]string `json:"annotations"`
}

// pair names a verb on a resource as kubectl does: "get pods",
// "update crawljobs.trawler.dev/status".
func pair(verb, group, resource, sub string) string {
	r := resource
	if group != "" {
		r += "." + group
	}
	if sub != "" {
		r += "/" + sub
	}
	return verb + " " + r
}

// checkRBAC reads what trawler's ServiceAccount did from the apiserver's
// audit log: every request must have been allowed, and the (verb,
// resource) pairs used must equal those the chart grants, apart from the
// justified unusedGrants.
func (r *releaseEnv) checkRBAC(t *testing.T) {
	t.Helper()
	used, nonResource := map[string]int{}, map[string]int{}
	f, err := os.Open(r.env.Cluster.AuditLog)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("audit log line %q: %v", sc.Text(), err)
		}
		if e.User.Username != releaseSA || seen[e.AuditID] {
			continue
		}
		seen[e.AuditID] = true
		if d := e.Annotations["authorization.k8s.io/decision"]; d != "allow" ||
			(e.ResponseStatus != nil && e.ResponseStatus.Code == 403) {
			t.Errorf("trawler's request %s %s was not allowed: decision %q, reason %q", e.Verb, e.RequestURI, d,
				e.Annotations["authorization.k8s.io/reason"])
		}
		if e.ObjectRef == nil {
			nonResource[e.Verb+" "+strings.SplitN(e.RequestURI, "?", 2)[0]]++
			continue
		}
		used[pair(e.Verb, e.ObjectRef.APIGroup, e.ObjectRef.Resource, e.ObjectRef.Subresource)]++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(used) == 0 {
		t.Fatalf("no request of %s in %s", releaseSA, r.env.Cluster.AuditLog)
	}
	granted := r.grantedPairs(t)
	t.Logf("requests of %s by (verb, resource):", releaseSA)
	for _, p := range slices.Sorted(maps.Keys(used)) {
		t.Logf("  %-55s %5d", p, used[p])
		if !granted[p] {
			t.Errorf("used but not granted by the chart: %s", p)
		}
	}
	t.Logf("non-resource requests: %v", nonResource)
	for _, p := range slices.Sorted(maps.Keys(granted)) {
		if used[p] > 0 {
			continue
		}
		if why, ok := unusedGrants[p]; ok {
			t.Logf("granted, unused here: %s (%s)", p, why)
			continue
		}
		t.Errorf("granted by the chart but never used: %s", p)
	}
	for p := range unusedGrants {
		if !granted[p] {
			t.Errorf("unusedGrants lists %s, which the chart does not grant", p)
		}
	}
}

// grantedPairs expands the rules of the release's Roles and ClusterRoles.
func (r *releaseEnv) grantedPairs(t *testing.T) map[string]bool {
	t.Helper()
	ctx := context.Background()
	opts := metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + releaseName}
	var rules []rbacv1.PolicyRule
	roles, err := r.env.Client.RbacV1().Roles("").List(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, role := range roles.Items {
		rules = append(rules, role.Rules...)
	}
	clusterRoles, err := r.env.Client.RbacV1().ClusterRoles().List(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, role := range clusterRoles.Items {
		rules = append(rules, role.Rules...)
	}
	granted := map[string]bool{}
	for _, rule := range rules {
		for _, g := range rule.APIGroups {
			for _, res := range rule.Resources {
				resource, sub, _ := strings.Cut(res, "/")
				for _, v := range rule.Verbs {
					granted[pair(v, g, resource, sub)] = true
				}
			}
		}
	}
	return granted
}

// checkUninstalled: nothing of the release is left but the crawler
// namespace (kept by its resource policy, with the crawls' data) and the
// CRDs (Helm never deletes what it installed from crds/).
func (r *releaseEnv) checkUninstalled(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	meta, err := metadata.NewForConfig(r.env.Config())
	if err != nil {
		t.Fatal(err)
	}
	release := "app.kubernetes.io/instance=" + releaseName
	gvr := func(group, version, resource string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: group, Version: version, Resource: resource}
	}
	for _, l := range []struct {
		resource  schema.GroupVersionResource
		namespace string // "" = all
		selector  string // "" = every object
	}{
		// Everything in the release namespace that a pod or trawler makes.
		{gvr("", "v1", "pods"), releaseNamespace, ""},
		{gvr("", "v1", "persistentvolumeclaims"), releaseNamespace, ""},
		{gvr("coordination.k8s.io", "v1", "leases"), releaseNamespace, ""},
		// The release's own objects anywhere.
		{gvr("apps", "v1", "deployments"), "", release},
		{gvr("", "v1", "services"), "", release},
		{gvr("", "v1", "configmaps"), "", release},
		{gvr("", "v1", "secrets"), "", release},
		{gvr("", "v1", "serviceaccounts"), "", release},
		{gvr("rbac.authorization.k8s.io", "v1", "roles"), "", release},
		{gvr("rbac.authorization.k8s.io", "v1", "rolebindings"), "", release},
		{gvr("rbac.authorization.k8s.io", "v1", "clusterroles"), "", release},
		{gvr("rbac.authorization.k8s.io", "v1", "clusterrolebindings"), "", release},
		{gvr("scheduling.k8s.io", "v1", "priorityclasses"), "", release},
		{gvr("policy", "v1", "poddisruptionbudgets"), "", release},
		{gvr("networking.k8s.io", "v1", "networkpolicies"), "", release},
	} {
		list, err := meta.Resource(l.resource).Namespace(l.namespace).List(ctx, metav1.ListOptions{LabelSelector: l.selector})
		if err != nil {
			t.Errorf("listing %s: %v", l.resource.Resource, err)
			continue
		}
		for _, o := range list.Items {
			t.Errorf("%s %s/%s left after uninstall", l.resource.Resource, o.Namespace, o.Name)
		}
	}
	if _, err := r.env.Client.CoreV1().Namespaces().Get(ctx, crawlerNamespace, metav1.GetOptions{}); err != nil {
		t.Errorf("the crawler namespace was not kept: %v", err)
	}
}
