package k8s_test

import (
	"context"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// The apiserver validates what helm cannot: CIDRs, that every except
// range lies inside its block, ports and selectors. So the crawler egress
// policy is created in the sandbox, with the extra rules and ranges a
// values file may add. What it selects is checked against the operator's
// pods in operator/chart_netpol_test.go.
func TestChartCrawlerEgressPolicyIsValid(t *testing.T) {
	objects := renderChart(t, `crawler_network_policy_denied_cidrs: [100.96.0.0/11, "fd00:10:96::/112"]
crawler_network_policy_additional_egress:
  - to: [{ipBlock: {cidr: 10.1.2.3/32}}, {namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: storage}}}]
    ports: [{port: 9000, protocol: TCP}]
`)
	o, ok := objects["NetworkPolicy/crawler-egress"]
	if !ok {
		t.Fatal("no NetworkPolicy crawler-egress rendered")
	}
	var np networkingv1.NetworkPolicy
	if err := yaml.Unmarshal([]byte(o.text), &np); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	np.Namespace = e.ns
	if _, err := e.kube.NetworkingV1().NetworkPolicies(e.ns).Create(context.Background(), &np, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the apiserver refuses the chart's NetworkPolicy: %v", err)
	}
}
