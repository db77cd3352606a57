package operator

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
)

// trimForCache is the informers' transform: it drops what the operator
// never reads before an object is cached, since with a thousand crawls
// the caches hold thousands of pods, PVCs and CrawlJobs.
//   - managedFields, on every object (a tenth of the cache). An update
//     sent from a cached copy leaves them as they are: only an empty list
//     would reset them.
//   - a pod's spec but its node and its containers' names, images and
//     requests (podStatus and the failed-crawl log reader read those):
//     env, volumes, affinity and tolerations were a sixth of the heap.
//     Of its status, the phase, reason and message, the scheduling
//     condition (why a crawl waits) and each container's state, last
//     termination and restarts (crash loops, exit codes). The operator
//     never updates a pod, so the trimmed pod is never sent back.
//   - a PVC's spec but its requests (the pod status shows the storage
//     request), and its status: the operator never reads them, and never
//     updates a PVC.
//   - a ConfigMap's values: the operator only checks that the crawl
//     config's key is there (pods mount it), and a config with its seed
//     list can be large.
func trimForCache(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		o.Spec, o.Status = trimPodSpec(o.Spec), trimPodStatus(o.Status)
	case *corev1.PersistentVolumeClaim:
		o.Spec = corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{Requests: o.Spec.Resources.Requests}}
		o.Status = corev1.PersistentVolumeClaimStatus{}
	case *corev1.ConfigMap:
		for k := range o.Data {
			o.Data[k] = ""
		}
		for k := range o.BinaryData {
			o.BinaryData[k] = nil
		}
	}
	return obj, nil
}

func trimPodSpec(s corev1.PodSpec) corev1.PodSpec {
	out := corev1.PodSpec{NodeName: s.NodeName, Containers: make([]corev1.Container, len(s.Containers))}
	for i, c := range s.Containers {
		out.Containers[i] = corev1.Container{Name: c.Name, Image: c.Image,
			Resources: corev1.ResourceRequirements{Requests: c.Resources.Requests}}
	}
	return out
}

func trimPodStatus(s corev1.PodStatus) corev1.PodStatus {
	out := corev1.PodStatus{Phase: s.Phase, Reason: s.Reason, Message: s.Message}
	for _, c := range s.Conditions {
		if c.Type == corev1.PodScheduled {
			out.Conditions = append(out.Conditions, c)
		}
	}
	if len(s.ContainerStatuses) > 0 {
		out.ContainerStatuses = make([]corev1.ContainerStatus, len(s.ContainerStatuses))
		for i, c := range s.ContainerStatuses {
			out.ContainerStatuses[i] = corev1.ContainerStatus{Name: c.Name, State: c.State,
				LastTerminationState: c.LastTerminationState, Ready: c.Ready, Started: c.Started, RestartCount: c.RestartCount}
		}
	}
	return out
}
