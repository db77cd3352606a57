package kubelet

import (
	"context"
	"fmt"
	"runtime"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
)

// kubeletVersion is what the nodes report; it matches the control plane.
const kubeletVersion = "v1.35.4"

// leaseDuration is the node lease's duration; the heartbeat renews it.
const leaseDuration = 40 * time.Second

// registerNode creates (or takes over) a node, reports it Ready and then
// removes the not-ready taint that admission puts on every new Node: in a
// cluster the node-lifecycle controller does that once the node is Ready,
// and the sandbox does not run it.
func (k *Kubelet) registerNode(ctx context.Context, name string) error {
	labels := map[string]string{
		corev1.LabelHostname: name, corev1.LabelOSStable: "linux", corev1.LabelArchStable: runtime.GOARCH,
	}
	for key, v := range k.opts.Nodes.Labels {
		labels[key] = v
	}
	nodes := k.client.CoreV1().Nodes()
	_, err := nodes.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("registering node %s: %w", name, err)
	}
	if err := k.updateNodeStatus(ctx, name); err != nil {
		return err
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := nodes.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		var kept []corev1.Taint
		for _, t := range node.Spec.Taints {
			if t.Key != corev1.TaintNodeNotReady && t.Key != corev1.TaintNodeUnreachable {
				kept = append(kept, t)
			}
		}
		if len(kept) == len(node.Spec.Taints) {
			return nil
		}
		node.Spec.Taints = kept
		_, err = nodes.Update(ctx, node, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("removing not-ready taint from node %s: %w", name, err)
	}
	return nil
}

// heartbeat renews the node leases and Ready conditions, as a kubelet
// does, so a node-lifecycle controller would find the nodes healthy.
func (k *Kubelet) heartbeat(ctx context.Context) {
	t := time.NewTicker(k.opts.Heartbeat)
	defer t.Stop()
	for {
		for _, name := range k.nodes {
			if err := k.renewLease(ctx, name); err != nil && ctx.Err() == nil {
				k.log.Warn("renewing node lease", "node", name, "err", err)
			}
			if err := k.updateNodeStatus(ctx, name); err != nil && ctx.Err() == nil {
				k.log.Warn("updating node status", "node", name, "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (k *Kubelet) updateNodeStatus(ctx context.Context, name string) error {
	nodes := k.client.CoreV1().Nodes()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := nodes.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		node.Status = k.nodeStatus(node.Status, name, metav1.Now())
		_, err = nodes.UpdateStatus(ctx, node, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("updating status of node %s: %w", name, err)
	}
	return nil
}

// nodeStatus is a healthy node's status with fresh heartbeats; transition
// times already in old are kept.
func (k *Kubelet) nodeStatus(old corev1.NodeStatus, name string, now metav1.Time) corev1.NodeStatus {
	n := k.opts.Nodes
	resources := corev1.ResourceList{
		corev1.ResourceCPU:              n.CPU,
		corev1.ResourceMemory:           n.Memory,
		corev1.ResourcePods:             *resource.NewQuantity(int64(n.Pods), resource.DecimalSI),
		corev1.ResourceEphemeralStorage: resource.MustParse("1Ti"),
	}
	conditions := []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status"},
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory"},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure"},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID"},
	}
	for i := range conditions {
		c := &conditions[i]
		c.LastHeartbeatTime, c.LastTransitionTime = now, now
		for _, o := range old.Conditions {
			if o.Type == c.Type && o.Status == c.Status {
				c.LastTransitionTime = o.LastTransitionTime
			}
		}
	}
	return corev1.NodeStatus{
		Capacity:    resources,
		Allocatable: resources,
		Conditions:  conditions,
		Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: nodeIP}, {Type: corev1.NodeHostName, Address: name},
		},
		NodeInfo: corev1.NodeSystemInfo{
			KubeletVersion: kubeletVersion, OperatingSystem: "linux", Architecture: runtime.GOARCH,
			ContainerRuntimeVersion: "sandbox://" + kubeletVersion,
		},
	}
}

// renewLease creates or renews the node's Lease in kube-node-lease.
func (k *Kubelet) renewLease(ctx context.Context, name string) error {
	leases := k.client.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	renew := metav1.NowMicro()
	lease, err := leases.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &name,
				LeaseDurationSeconds: new(int32(leaseDuration / time.Second)), RenewTime: &renew},
		}, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	lease.Spec.RenewTime = &renew
	_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	return err
}
