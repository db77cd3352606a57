package operator

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/trawlerhq/trawler/crawlredis"
	"github.com/trawlerhq/trawler/k8s"
	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
)

// The crawler's liveness probe: a browser may be busy for minutes on one
// page, so only a long silence counts.
const (
	livenessInitialDelaySeconds = 15
	livenessPeriodSeconds       = 120
	livenessFailureThreshold    = 3
)

// redisGraceSeconds is the Redis pod's termination grace: its data is on
// the PVC (append-only file), so it needs no long shutdown.
const redisGraceSeconds = 10

// unreachableTolerationSeconds is how long crawl pods stay on a node that
// stopped answering before they are evicted, so a short network blip does
// not restart a crawl.
const unreachableTolerationSeconds = 300

// childPlan says which children a CrawlJob should have right now. decide
// fills it (plan.Children); desiredChildren renders it.
type childPlan struct {
	// CrawlerPVCs and CrawlerPods are the instance indices to render.
	CrawlerPVCs []int
	CrawlerPods []int
	RedisPVC    bool
	RedisPod    bool
}

// children are the objects a CrawlJob should own, keyed by name.
type children struct {
	Pods map[string]*corev1.Pod
	PVCs map[string]*corev1.PersistentVolumeClaim
}

// desiredChildren renders a plan into pods and PVCs. It is pure but for
// the proxy list, read as it is now: the same job, config, proxies and
// plan always give the same objects.
func desiredChildren(cj *trawlerv1.CrawlJob, cfg Config, plan childPlan) children {
	out := children{Pods: map[string]*corev1.Pod{}, PVCs: map[string]*corev1.PersistentVolumeClaim{}}
	id := cj.Spec.ID
	if plan.RedisPVC {
		p := newPVC(cj, k8s.RedisName(id), k8s.RoleRedis, cfg.RedisStorage, cfg.StorageClass, nil)
		out.PVCs[p.Name] = p
	}
	if plan.RedisPod {
		p := redisPod(cj, cfg)
		out.Pods[p.Name] = p
	}
	for _, i := range plan.CrawlerPVCs {
		p := newPVC(cj, k8s.CrawlerName(id, i), k8s.RoleCrawler, cfg.CrawlerStorage, cfg.StorageClass,
			map[string]string{k8s.LabelInstance: strconv.Itoa(i)})
		out.PVCs[p.Name] = p
	}
	for _, i := range plan.CrawlerPods {
		p := crawlerPod(cj, cfg, i)
		out.Pods[p.Name] = p
	}
	return out
}

// ownerRef makes the CrawlJob the controller of a child, so the garbage
// collector removes children a crashed teardown left behind.
func ownerRef(cj *trawlerv1.CrawlJob) metav1.OwnerReference {
	return *metav1.NewControllerRef(cj, trawlerv1.SchemeGroupVersion.WithKind("CrawlJob"))
}

func childLabels(cj *trawlerv1.CrawlJob, role string, extra map[string]string) map[string]string {
	l := map[string]string{k8s.LabelCrawl: cj.Spec.ID, k8s.LabelRole: role}
	for k, v := range extra {
		l[k] = v
	}
	return l
}

func newPVC(cj *trawlerv1.CrawlJob, name, role string, size resource.Quantity, class string, extra map[string]string) *corev1.PersistentVolumeClaim {
	p := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       cj.Namespace,
			Labels:          childLabels(cj, role, extra),
			OwnerReferences: []metav1.OwnerReference{ownerRef(cj)},
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: size.DeepCopy()},
			},
		},
	}
	if class != "" {
		p.Spec.StorageClassName = &class
	}
	return p
}

// crawlerPod is instance i of the crawl, as its channel's crawler expects
// it (crawlerCommand and configMount tell the protocols apart), running
// the channel's image: its hostname is its instance id in Redis, CRAWL_ID
// is the key prefix and WEBHOOK_URL makes it push finished WACZs to
// crawls-done.
func crawlerPod(cj *trawlerv1.CrawlJob, cfg Config, i int) *corev1.Pod {
	id := cj.Spec.ID
	name := k8s.CrawlerName(id, i)
	redisURL := k8s.RedisURL(id, cfg.Namespace, cfg.ClusterDomain)
	cpu, mem := cfg.crawlerResources()
	ch := cfg.crawlerChannel(cj.Spec.CrawlerChannel)

	env := []corev1.EnvVar{
		{Name: "CRAWL_ID", Value: id},
		{Name: "WEBHOOK_URL", Value: redisURL + "/" + crawlredis.CrawlsDone},
		{Name: "STORE_PATH", Value: cj.Spec.StoragePath},
		{Name: "STORE_FILENAME", Value: cj.Spec.StoreFilename},
		{Name: "STORE_USER", Value: cj.Spec.UserID},
	}
	if host, port, ok := cfg.socksProxy(); ok {
		env = append(env, corev1.EnvVar{Name: "SOCKS_HOST", Value: host}, corev1.EnvVar{Name: "SOCKS_PORT", Value: port})
	}
	container := corev1.Container{
		Name:            "crawler",
		Image:           ch.Image,
		ImagePullPolicy: corev1.PullPolicy(ch.ImagePullPolicy),
		Command:         crawlerCommand(cj, cfg, ch.Protocol, redisURL),
		Env:             env,
		EnvFrom: []corev1.EnvFromSource{
			{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: k8s.SharedCrawlerConfig(ch.Protocol)}}},
			{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: k8s.StorageSecretName(storageName(cj.Spec.StorageName))}}},
		},
		VolumeMounts: []corev1.VolumeMount{
			configMount(ch.Protocol),
			{Name: "crawl-data", MountPath: "/crawls"},
		},
		Resources: corev1.ResourceRequirements{
			Limits:   corev1.ResourceList{corev1.ResourceMemory: mem.DeepCopy()},
			Requests: corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: mem},
		},
	}
	if cfg.CrawlerLivenessPort != 0 {
		container.LivenessProbe = &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
				Path: "/healthz", Port: intstr.FromInt32(int32(cfg.CrawlerLivenessPort))}},
			InitialDelaySeconds: livenessInitialDelaySeconds,
			PeriodSeconds:       livenessPeriodSeconds,
			FailureThreshold:    livenessFailureThreshold,
		}
	}
	grace := cfg.TerminationGraceSeconds
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       cj.Namespace,
			Labels:          childLabels(cj, k8s.RoleCrawler, map[string]string{k8s.LabelInstance: strconv.Itoa(i)}),
			OwnerReferences: []metav1.OwnerReference{ownerRef(cj)},
		},
		Spec: corev1.PodSpec{
			Hostname:                      name,
			Subdomain:                     k8s.CrawlerSubdomain,
			PriorityClassName:             k8s.PriorityClassName(i),
			RestartPolicy:                 corev1.RestartPolicyOnFailure,
			TerminationGracePeriodSeconds: &grace,
			Affinity:                      affinity(cfg.CrawlerNodeType, id),
			Tolerations:                   tolerations(),
			Volumes: []corev1.Volume{
				{Name: "crawl-config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: cj.Spec.ConfigMap}}}},
				{Name: "crawl-data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
					ClaimName: name}}},
			},
			Containers: []corev1.Container{container},
		},
	}
	proxy, _ := cfg.proxy(cj.Spec.ProxyID)
	applyProxy(pod, proxy, cfg.ProxyMatchHosts)
	return pod
}

// Where each protocol's crawler finds its crawl config: 0.11 reads the
// one file, 1.x the ConfigMap's folder, which also takes updates.
const (
	configPathV011 = "/tmp/crawl-config.json"
	configDirV1    = "/tmp/config/"
)

// crawlerCommand is the crawler's command line for the protocol its
// channel speaks; the rest of its flags come from the protocol's
// CRAWL_ARGS (k8s.CrawlArgs, k8s.CrawlArgsV1). 1.x takes --workers here.
func crawlerCommand(cj *trawlerv1.CrawlJob, cfg Config, protocol, redisURL string) []string {
	command := []string{"crawl", "--config", configPathV011, "--redisStoreUrl", redisURL}
	if protocol == k8s.ProtocolV1 {
		command = []string{"crawl", "--config", configDirV1 + k8s.ConfigMapKey,
			"--workers", strconv.Itoa(max(cfg.CrawlerBrowsers, 1)), "--redisStoreUrl", redisURL}
	}
	if cj.Spec.ProfileFilename != "" {
		command = append(command, "--profile", "@profiles/"+cj.Spec.ProfileFilename)
	}
	return command
}

// configMount mounts the crawl's ConfigMap where the protocol's crawler
// reads it.
func configMount(protocol string) corev1.VolumeMount {
	if protocol == k8s.ProtocolV1 {
		return corev1.VolumeMount{Name: "crawl-config", MountPath: configDirV1, ReadOnly: true}
	}
	return corev1.VolumeMount{Name: "crawl-config", MountPath: configPathV011, SubPath: k8s.ConfigMapKey, ReadOnly: true}
}

// redisPod is the crawl's shared state store. Its data lives on its PVC
// (append-only file), so the pod can be paused and recreated freely.
func redisPod(cj *trawlerv1.CrawlJob, cfg Config) *corev1.Pod {
	name := k8s.RedisName(cj.Spec.ID)
	grace := int64(redisGraceSeconds)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       cj.Namespace,
			Labels:          childLabels(cj, k8s.RoleRedis, nil),
			OwnerReferences: []metav1.OwnerReference{ownerRef(cj)},
		},
		Spec: corev1.PodSpec{
			Hostname:                      name,
			Subdomain:                     k8s.RedisSubdomain,
			TerminationGracePeriodSeconds: &grace,
			Affinity:                      affinity(cfg.RedisNodeType, cj.Spec.ID),
			Tolerations:                   tolerations(),
			Volumes: []corev1.Volume{
				{Name: "shared-redis-conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: k8s.SharedRedisConfName},
					Items:                []corev1.KeyToPath{{Key: "redis.conf", Path: "redis.conf"}}}}},
				{Name: "redis-data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
					ClaimName: name}}},
			},
			Containers: []corev1.Container{{
				Name:            "redis",
				Image:           cfg.RedisImage,
				ImagePullPolicy: corev1.PullPolicy(cfg.RedisPullPolicy),
				Args:            []string{"/redis-conf/redis.conf", "--appendonly", "yes"},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "redis-data", MountPath: "/data"},
					{Name: "shared-redis-conf", MountPath: "/redis-conf"},
				},
				Resources: corev1.ResourceRequirements{
					Limits:   corev1.ResourceList{corev1.ResourceMemory: cfg.RedisMemory.DeepCopy()},
					Requests: corev1.ResourceList{corev1.ResourceCPU: cfg.RedisCPU.DeepCopy(), corev1.ResourceMemory: cfg.RedisMemory.DeepCopy()},
				},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
					Exec: &corev1.ExecAction{Command: []string{"redis-cli", "ping"}}}},
			}},
		},
	}
}

// storageName is the storage a job's files go to.
func storageName(name string) string {
	if name == "" {
		return k8s.DefaultStorageName
	}
	return name
}

// affinity prefers nodes of the given type and keeps a crawl's pods in one
// zone (when crawlID is set).
func affinity(nodeType, crawlID string) *corev1.Affinity {
	a := &corev1.Affinity{}
	if crawlID != "" {
		a.PodAffinity = &corev1.PodAffinity{
			PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
				Weight: 2,
				PodAffinityTerm: corev1.PodAffinityTerm{
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{k8s.LabelCrawl: crawlID}},
					TopologyKey:   "topology.kubernetes.io/zone",
				},
			}},
		}
	}
	if nodeType != "" {
		a.NodeAffinity = &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
			Weight: 1,
			Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
				Key: "nodeType", Operator: corev1.NodeSelectorOpIn, Values: []string{nodeType}}}},
		}}}
	}
	return a
}

// tolerations let crawl pods onto dedicated crawling nodes and keep them
// a while on a node that stops answering.
func tolerations() []corev1.Toleration {
	wait := int64(unreachableTolerationSeconds)
	return []corev1.Toleration{
		{Key: "nodeType", Operator: corev1.TolerationOpEqual, Value: "crawling", Effect: corev1.TaintEffectNoSchedule},
		{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &wait},
		{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &wait},
	}
}
