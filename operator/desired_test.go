package operator

import (
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
)

func envMap(c corev1.Container) map[string]string {
	m := map[string]string{}
	for _, e := range c.Env {
		m[e.Name] = e.Value
	}
	return m
}

func TestCrawlerPodMatchesCrawlerContract(t *testing.T) {
	cfg := testConfig()
	cj := newJob(3)
	p := crawlerPod(cj, cfg, 2)
	c := p.Spec.Containers[0]
	url := "redis://redis-" + testID + ".redis.crawlers.svc.cluster.local/0"

	checks := []struct {
		what      string
		got, want any
	}{
		{"name", p.Name, "crawl-" + testID + "-2"},
		{"hostname", p.Spec.Hostname, p.Name},
		{"subdomain", p.Spec.Subdomain, "crawler"},
		{"labels", p.Labels, map[string]string{"crawl": testID, "role": "crawler", "trawler.dev/instance": "2"}},
		{"priority class", p.Spec.PriorityClassName, "crawl-instance-2"},
		{"restart policy", p.Spec.RestartPolicy, corev1.RestartPolicyOnFailure},
		{"grace", *p.Spec.TerminationGracePeriodSeconds, int64(600)},
		{"command", c.Command, []string{"crawl", "--config", "/tmp/crawl-config.json", "--redisStoreUrl", url}},
		{"env", envMap(c), map[string]string{"CRAWL_ID": testID, "WEBHOOK_URL": url + "/crawls-done",
			"STORE_PATH": "org1/", "STORE_FILENAME": "@ts-@hostsuffix.wacz", "STORE_USER": "user1"}},
		{"envFrom configmap", c.EnvFrom[0].ConfigMapRef.Name, "shared-crawler-config"},
		{"envFrom secret", c.EnvFrom[1].SecretRef.Name, "storage-default"},
		{"config volume", p.Spec.Volumes[0].ConfigMap.Name, "crawl-config-" + testID},
		{"data volume", p.Spec.Volumes[1].PersistentVolumeClaim.ClaimName, p.Name},
		{"config mount", c.VolumeMounts[0], corev1.VolumeMount{Name: "crawl-config", MountPath: "/tmp/crawl-config.json", SubPath: "crawl-config.json", ReadOnly: true}},
		{"data mount", c.VolumeMounts[1].MountPath, "/crawls"},
		{"cpu request", c.Resources.Requests.Cpu().MilliValue(), int64(1200)},
		{"memory request", c.Resources.Requests.Memory().Value(), int64(1342177280)},
		{"memory limit", c.Resources.Limits.Memory().Value(), int64(1342177280)},
		{"liveness port", c.LivenessProbe.HTTPGet.Port.IntValue(), 6065},
		{"owner", p.OwnerReferences[0].UID, cj.UID},
		{"owner is controller", *p.OwnerReferences[0].Controller, true},
		{"tolerations", len(p.Spec.Tolerations), 3},
	}
	for _, c := range checks {
		if !equalish(c.got, c.want) {
			t.Errorf("%s = %#v, want %#v", c.what, c.got, c.want)
		}
	}
}

func equalish(a, b any) bool {
	switch av := a.(type) {
	case []string:
		return slices.Equal(av, b.([]string))
	case map[string]string:
		bv := b.(map[string]string)
		if len(av) != len(bv) {
			return false
		}
		for k, v := range av {
			if bv[k] != v {
				return false
			}
		}
		return true
	}
	return a == b
}

func TestCrawlerPodOptions(t *testing.T) {
	tests := []struct {
		name  string
		cfg   func(*Config)
		job   func(*trawlerv1.CrawlJob)
		check func(t *testing.T, p *corev1.Pod)
	}{
		{"profile adds --profile", nil, func(cj *trawlerv1.CrawlJob) { cj.Spec.ProfileFilename = "prof.tar.gz" },
			func(t *testing.T, p *corev1.Pod) {
				cmd := p.Spec.Containers[0].Command
				if !slices.Equal(cmd[len(cmd)-2:], []string{"--profile", "@profiles/prof.tar.gz"}) {
					t.Errorf("command %v", cmd)
				}
			}},
		{"socks proxy env", func(c *Config) { c.SocksProxyHost, c.SocksProxyPort = "socks", 1080 }, nil,
			func(t *testing.T, p *corev1.Pod) {
				env := envMap(p.Spec.Containers[0])
				if env["SOCKS_HOST"] != "socks" || env["SOCKS_PORT"] != "1080" {
					t.Errorf("env %v", env)
				}
			}},
		{"socks proxy without a port: 9050, never 0", func(c *Config) { c.SocksProxyHost = "tor" }, nil,
			func(t *testing.T, p *corev1.Pod) {
				if env := envMap(p.Spec.Containers[0]); env["SOCKS_HOST"] != "tor" || env["SOCKS_PORT"] != "9050" {
					t.Errorf("env %v", env)
				}
			}},
		{"no socks proxy: no socks env", nil, nil,
			func(t *testing.T, p *corev1.Pod) {
				env := envMap(p.Spec.Containers[0])
				if _, ok := env["SOCKS_HOST"]; ok {
					t.Errorf("env %v", env)
				}
				if _, ok := env["SOCKS_PORT"]; ok {
					t.Errorf("env %v", env)
				}
			}},
		{"liveness port 0 means no probe", func(c *Config) { c.CrawlerLivenessPort = 0 }, nil,
			func(t *testing.T, p *corev1.Pod) {
				if p.Spec.Containers[0].LivenessProbe != nil {
					t.Error("probe set")
				}
			}},
		{"explicit crawler resources win", func(c *Config) {
			cpu, mem := resource.MustParse("2"), resource.MustParse("3Gi")
			c.CrawlerCPU, c.CrawlerMemory = &cpu, &mem
		}, nil, func(t *testing.T, p *corev1.Pod) {
			r := p.Spec.Containers[0].Resources
			if r.Requests.Cpu().String() != "2" || r.Limits.Memory().String() != "3Gi" {
				t.Errorf("resources %v", r)
			}
		}},
		{"one browser uses the base", func(c *Config) { c.CrawlerBrowsers = 1 }, nil, func(t *testing.T, p *corev1.Pod) {
			r := p.Spec.Containers[0].Resources
			if r.Requests.Cpu().MilliValue() != 900 || r.Requests.Memory().Value() != 1<<30 {
				t.Errorf("resources %v", r)
			}
		}},
		{"cluster domain in redis url", func(c *Config) { c.ClusterDomain = "example.internal" }, nil,
			func(t *testing.T, p *corev1.Pod) {
				want := "redis://redis-" + testID + ".redis.crawlers.svc.example.internal/0"
				if got := p.Spec.Containers[0].Command[4]; got != want {
					t.Errorf("url %s", got)
				}
			}},
		{"node type affinity", func(c *Config) { c.CrawlerNodeType = "crawling" }, nil, func(t *testing.T, p *corev1.Pod) {
			if p.Spec.Affinity.NodeAffinity == nil {
				t.Error("no node affinity")
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			cj := newJob(1)
			if tt.job != nil {
				tt.job(cj)
			}
			tt.check(t, crawlerPod(cj, cfg, 0))
		})
	}
}

func TestRedisPod(t *testing.T) {
	p := redisPod(newJob(1), testConfig())
	c := p.Spec.Containers[0]
	if p.Name != "redis-"+testID || p.Spec.Hostname != p.Name || p.Spec.Subdomain != "redis" {
		t.Errorf("identity %s %s %s", p.Name, p.Spec.Hostname, p.Spec.Subdomain)
	}
	if p.Spec.RestartPolicy != "" || p.Spec.PriorityClassName != "" || *p.Spec.TerminationGracePeriodSeconds != 10 {
		t.Errorf("policy %v %q %d", p.Spec.RestartPolicy, p.Spec.PriorityClassName, *p.Spec.TerminationGracePeriodSeconds)
	}
	if !slices.Equal(c.Args, []string{"/redis-conf/redis.conf", "--appendonly", "yes"}) {
		t.Errorf("args %v", c.Args)
	}
	if p.Spec.Volumes[1].PersistentVolumeClaim.ClaimName != p.Name || p.Spec.Volumes[0].ConfigMap.Name != "shared-redis-conf" {
		t.Errorf("volumes %v", p.Spec.Volumes)
	}
	if c.Resources.Limits.Memory().String() != "48Mi" || c.Resources.Requests.Cpu().String() != "5m" {
		t.Errorf("resources %v", c.Resources)
	}
}

func TestDesiredChildren(t *testing.T) {
	tests := []struct {
		name     string
		plan     childPlan
		class    string
		wantPods []string
		wantPVCs map[string]string // name -> size
	}{
		{"nothing", childPlan{}, "", nil, map[string]string{}},
		{"first render", childPlan{RedisPVC: true, CrawlerPVCs: []int{0, 1}, CrawlerPods: []int{0, 1}}, "",
			[]string{name(0), name(1)},
			map[string]string{"redis-" + testID: "3Gi", name(0): "22Gi", name(1): "22Gi"}},
		{"redis pod once active", childPlan{RedisPVC: true, RedisPod: true, CrawlerPVCs: []int{0}, CrawlerPods: []int{0}}, "fast",
			[]string{name(0), "redis-" + testID},
			map[string]string{"redis-" + testID: "3Gi", name(0): "22Gi"}},
		{"restart keeps PVCs", childPlan{RedisPVC: true, RedisPod: true, CrawlerPVCs: []int{0, 1}}, "",
			[]string{"redis-" + testID},
			map[string]string{"redis-" + testID: "3Gi", name(0): "22Gi", name(1): "22Gi"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.StorageClass = tt.class
			got := desiredChildren(newJob(2), cfg, tt.plan)
			if names := slices.Sorted(maps.Keys(got.Pods)); !slices.Equal(names, tt.wantPods) {
				t.Errorf("pods %v, want %v", names, tt.wantPods)
			}
			if len(got.PVCs) != len(tt.wantPVCs) {
				t.Errorf("pvcs %d, want %d", len(got.PVCs), len(tt.wantPVCs))
			}
			for n, size := range tt.wantPVCs {
				p := got.PVCs[n]
				if p == nil {
					t.Fatalf("no pvc %s", n)
				}
				if s := p.Spec.Resources.Requests.Storage().String(); s != size {
					t.Errorf("%s size %s, want %s", n, s, size)
				}
				if tt.class != "" && (p.Spec.StorageClassName == nil || *p.Spec.StorageClassName != tt.class) {
					t.Errorf("%s class %v", n, p.Spec.StorageClassName)
				}
				if tt.class == "" && p.Spec.StorageClassName != nil {
					t.Errorf("%s class set", n)
				}
			}
		})
	}
}
