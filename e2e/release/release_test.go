package release

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/trawlerhq/trawler/e2e/e2etest"
	"github.com/trawlerhq/trawler/k8s"
	"github.com/trawlerhq/trawler/sandbox"
)

// TestHelmRelease installs the chart into the RBAC sandbox with its
// bundled stores, sends an invite e-mail and runs a crawl through the
// release's Service, checks trawler's requests against the chart's RBAC,
// upgrades to three replicas during a crawl, and uninstalls. The steps
// share one release, so they run in order in one test.
func TestHelmRelease(t *testing.T) {
	r := theRelease(t)
	values := filepath.Join(t.TempDir(), "sandbox.yaml")
	if err := os.WriteFile(values, []byte(r.sandboxValues()), 0o644); err != nil {
		t.Fatal(err)
	}

	began := time.Now()
	r.mustRun(t, "install", releaseName, chartDir, "--namespace", releaseNamespace, "--create-namespace",
		"--values", values, "--wait", "--timeout", "4m")
	t.Logf("helm install --wait took %s", time.Since(began).Round(100*time.Millisecond))
	r.checkInstalled(t)

	api := r.api(t)
	oid := api.OrgID()
	began = time.Now()
	r.checkEmail(t, api, oid)
	t.Logf("invite e-mail through the release: %s", time.Since(began).Round(100*time.Millisecond))

	since := time.Now()
	// Long enough (60 pages of 300 ms) that both crawlers get pages.
	crawl := api.StartCrawl(oid, "https://example.com/?sim-pages=60&sim-page-ms=300", 2)
	api.WaitCrawl(oid, crawl, 3*time.Minute)
	t.Logf("crawl through the release: %s", time.Since(since).Round(100*time.Millisecond))
	r.checkFiles(t, api, oid, crawl, 2)
	r.checkReplayEntryPoints(t, api)
	// The crawl ends when the operator has deleted its CrawlJob (a while
	// after it finished) and with it the pods and PVCs.
	e2etest.WaitFor(t, 2*time.Minute, "the finished crawl's CrawlJob to be deleted", func() (bool, error) {
		_, err := r.trawler.TrawlerV1().CrawlJobs(crawlerNamespace).Get(context.Background(), k8s.CrawlJobName(crawl), metav1.GetOptions{})
		return apierrors.IsNotFound(err), err
	})
	r.checkRBAC(t)

	began = time.Now()
	r.upgradeDuringCrawl(t, api, oid, values)
	t.Logf("upgrade during a crawl: %s", time.Since(began).Round(100*time.Millisecond))

	began = time.Now()
	r.mustRun(t, "uninstall", releaseName, "--namespace", releaseNamespace, "--wait", "--timeout", "3m")
	t.Logf("helm uninstall --wait took %s", time.Since(began).Round(100*time.Millisecond))
	r.checkUninstalled(t)
}

// checkInstalled: the CRDs are Established, the PriorityClasses exist and
// every trawler replica is Ready.
func (r *releaseEnv) checkInstalled(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	ext, err := apiextensionsclient.NewForConfig(r.env.Config())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"crawljobs.trawler.dev", "profilejobs.trawler.dev"} {
		crd, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("CRD %s: %v", name, err)
		}
		established := false
		for _, c := range crd.Status.Conditions {
			established = established || (c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue)
		}
		if !established {
			t.Errorf("CRD %s is not Established: %+v", name, crd.Status.Conditions)
		}
	}
	for i := range 3 {
		if _, err := r.env.Client.SchedulingV1().PriorityClasses().Get(ctx, fmt.Sprintf("crawl-instance-%d", i), metav1.GetOptions{}); err != nil {
			t.Errorf("PriorityClass crawl-instance-%d: %v", i, err)
		}
	}
	ready, err := r.readyPods(ctx)
	if err != nil || len(ready) != 2 {
		t.Fatalf("ready trawler pods: %d, %v; want 2", len(ready), err)
	}
}

// checkEmail: an invite made through the release reaches the sandbox's
// Mailpit from the chart's email.reply_to, its link on the chart's
// app_origin (the request has no X-Forwarded-Proto).
func (r *releaseEnv) checkEmail(t *testing.T, api *e2etest.Client, oid string) {
	t.Helper()
	const to = "invitee@release.test"
	api.JSON("POST", "/api/orgs/"+oid+"/invite", map[string]any{"email": to, "role": 10}, 200, nil)
	var mail sandbox.MailSummary
	e2etest.WaitFor(t, 30*time.Second, "the invite e-mail in Mailpit", func() (bool, error) {
		msgs, err := r.env.Mailpit.Messages(context.Background(), `to:"`+to+`"`)
		if len(msgs) > 0 {
			mail = msgs[0]
		}
		return len(msgs) > 0, err
	})
	if mail.From.Address != releaseMailFrom || len(mail.ReplyTo) != 1 || mail.ReplyTo[0].Address != releaseMailFrom {
		t.Errorf("invite e-mail from %v, reply to %v; want %s for both", mail.From, mail.ReplyTo, releaseMailFrom)
	}
	msg, err := r.env.Mailpit.Message(context.Background(), mail.ID)
	if err != nil {
		t.Fatal(err)
	}
	if link := releaseAppOrigin + "/join/"; !strings.Contains(msg.Text, "\n"+link) {
		t.Errorf("invite e-mail has no link starting with %s:\n%s", link, msg.Text)
	}
}

// upgradeDuringCrawl starts a crawl, upgrades the release to three
// replicas and a changed setting while it runs, and checks that the pods
// rolled, the operator's Lease moved to a new pod and the crawl completed
// with all its files.
func (r *releaseEnv) upgradeDuringCrawl(t *testing.T, api *e2etest.Client, oid string, values string) {
	t.Helper()
	ctx := context.Background()
	before, err := r.readyPods(ctx)
	if err != nil {
		t.Fatal(err)
	}
	oldPods := map[string]bool{}
	for _, p := range before {
		oldPods[p.Name] = true
	}
	// About a minute of crawling: 300 pages of 800 ms by 2 crawlers of 2 browsers.
	crawl := api.StartCrawl(oid, "https://example.com/?sim-pages=300&sim-page-ms=800", 2)
	api.WaitCrawlState(oid, crawl, time.Minute, "running")
	holder := r.leaseHolder(t)

	r.mustRun(t, "upgrade", releaseName, chartDir, "--namespace", releaseNamespace, "--values", values,
		"--set", "trawler_num_replicas=3", "--set", "log_level=debug", "--wait", "--timeout", "4m")
	e2etest.WaitFor(t, 3*time.Minute, "the upgrade to roll out", func() (bool, error) {
		return r.rolledOut(ctx, releaseName)
	})
	after, err := r.readyPods(ctx)
	if err != nil || len(after) != 3 {
		t.Fatalf("ready trawler pods after the upgrade: %d, %v; want 3", len(after), err)
	}
	for _, p := range after {
		if oldPods[p.Name] {
			t.Errorf("pod %s survived an upgrade that changed the configuration", p.Name)
		}
	}
	// The identity in the Lease is the one a pod logs when it starts leading.
	e2etest.WaitFor(t, time.Minute, "a new pod to take the Lease", func() (bool, error) {
		h := r.leaseHolder(t)
		if h == "" || h == holder {
			return false, fmt.Errorf("the Lease is held by %q", h)
		}
		for _, p := range after {
			if strings.Contains(r.env.Kubelet.Logs(releaseNamespace, p.Name, "trawler"), `"identity":"`+h+`"`) {
				return true, nil
			}
		}
		return false, fmt.Errorf("the Lease holder %s is none of the new pods", h)
	})
	api.WaitCrawl(oid, crawl, 3*time.Minute)
	r.checkFiles(t, api, oid, crawl, 2)
}

// leaseHolder is the identity holding the operator's Lease.
func (r *releaseEnv) leaseHolder(t *testing.T) string {
	t.Helper()
	l, err := r.env.Client.CoordinationV1().Leases(releaseNamespace).Get(context.Background(), "trawler-operator", metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// TestHelmRejectsBadValues: a wrong type and an unknown key fail helm
// install with the schema's message, before anything is created.
func TestHelmRejectsBadValues(t *testing.T) {
	r := theRelease(t)
	for _, tc := range []struct{ name, values, want string }{
		{"wrong type", "trawler_num_replicas: three\n", "trawler_num_replicas"},
		{"unknown key", "trawler_replicas: 3\n", "trawler_replicas"},
		{"bad quantity", "crawler_storage: lots\n", "crawler_storage"},
		{"bad duration", "operator_stats_interval: often\n", "operator_stats_interval"},
		// trawler would read a bare number as nanoseconds.
		{"duration without unit", "webhooks: {retry_delay: 10}\n", "/webhooks/retry_delay"},
		{"SMTP password without login", "email: {password: secret}\n", "/email/sender"},
		// Links are app_origin + their own path: without a scheme they are
		// no absolute links, a path would put them beside the app.
		{"app origin without scheme", "app_origin: crawls.example.org\n", "/app_origin"},
		{"app origin with a path", "app_origin: https://example.org/crawls\n", "/app_origin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "bad.yaml")
			if err := os.WriteFile(file, []byte(tc.values), 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			out, err := r.run(ctx, "install", "bad-values", chartDir, "--namespace", "bad-values",
				"--create-namespace", "--values", file)
			if err == nil {
				r.run(ctx, "uninstall", "bad-values", "--namespace", "bad-values")
				t.Fatalf("helm install accepted %q:\n%s", tc.values, out)
			}
			if !strings.Contains(out, "values don't meet the specifications of the schema") || !strings.Contains(out, tc.want) {
				t.Errorf("helm install of %q failed without the schema's message naming %s:\n%s", tc.values, tc.want, out)
			}
		})
	}
}
