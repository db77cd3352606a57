package operator

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
)

func TestTrimForCache(t *testing.T) {
	managed := []metav1.ManagedFieldsEntry{{Manager: "trawler", Operation: metav1.ManagedFieldsOperationUpdate}}
	meta := metav1.ObjectMeta{Name: "x", Labels: map[string]string{"a": "b"}, ManagedFields: managed}
	kept := metav1.ObjectMeta{Name: "x", Labels: map[string]string{"a": "b"}}
	requests := corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}
	limited := corev1.ResourceRequirements{Requests: requests.Requests, Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}
	storage := corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}
	scheduled := corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/1 nodes"}
	exited := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 17}}
	status := corev1.PodStatus{Phase: corev1.PodRunning, Reason: "r", Message: "m", HostIP: "10.0.0.1", PodIP: "10.1.0.1",
		QOSClass: corev1.PodQOSBurstable, Conditions: []corev1.PodCondition{{Type: corev1.PodReady}, scheduled},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "crawler", State: exited, LastTerminationState: exited, RestartCount: 3,
			Image: "img", ImageID: "sha", ContainerID: "id", VolumeMounts: []corev1.VolumeMountStatus{{Name: "v"}}}}}
	keptStatus := corev1.PodStatus{Phase: corev1.PodRunning, Reason: "r", Message: "m", Conditions: []corev1.PodCondition{scheduled},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "crawler", State: exited, LastTerminationState: exited, RestartCount: 3}}}
	tests := []struct {
		name    string
		in, out any
	}{
		{"a pod keeps its node, its containers' names, images and requests, and the status the operator reads",
			&corev1.Pod{ObjectMeta: meta, Status: status, Spec: corev1.PodSpec{
				NodeName: "node", Volumes: []corev1.Volume{{Name: "v"}}, Tolerations: []corev1.Toleration{{Key: "k"}},
				InitContainers: []corev1.Container{{Name: "init"}},
				Containers: []corev1.Container{{Name: "crawler", Image: "img", Resources: limited,
					Env: []corev1.EnvVar{{Name: "E", Value: "v"}}, VolumeMounts: []corev1.VolumeMount{{Name: "v"}}}},
			}},
			&corev1.Pod{ObjectMeta: kept, Status: keptStatus, Spec: corev1.PodSpec{
				NodeName: "node", Containers: []corev1.Container{{Name: "crawler", Image: "img", Resources: requests}},
			}}},
		{"a PVC keeps its requests only",
			&corev1.PersistentVolumeClaim{ObjectMeta: meta, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv",
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, Resources: storage},
				Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: storage.Requests}},
			&corev1.PersistentVolumeClaim{ObjectMeta: kept, Spec: corev1.PersistentVolumeClaimSpec{Resources: storage}}},
		{"a ConfigMap keeps its keys, not their values",
			&corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"crawl-config.json": `{"seeds":["https://example.com/"]}`},
				BinaryData: map[string][]byte{"b": {1, 2}}},
			&corev1.ConfigMap{ObjectMeta: kept, Data: map[string]string{"crawl-config.json": ""}, BinaryData: map[string][]byte{"b": nil}}},
		{"a CrawlJob keeps its spec and status",
			&trawlerv1.CrawlJob{ObjectMeta: meta, Spec: trawlerv1.CrawlJobSpec{ID: "c"}, Status: trawlerv1.CrawlJobStatus{State: "running"}},
			&trawlerv1.CrawlJob{ObjectMeta: kept, Spec: trawlerv1.CrawlJobSpec{ID: "c"}, Status: trawlerv1.CrawlJobStatus{State: "running"}}},
		{"a deleted object whose last state is unknown passes through",
			cache.DeletedFinalStateUnknown{Key: "ns/x"}, cache.DeletedFinalStateUnknown{Key: "ns/x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := trimForCache(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.out, got); diff != "" {
				t.Errorf("trimmed (-want +got):\n%s", diff)
			}
		})
	}
}
