package kubelet

import (
	"context"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// Annotations of the PV controller. The scheduler's VolumeBinding plugin
// treats a PVC as bound only when it has annBindCompleted.
const (
	annBindCompleted     = "pv.kubernetes.io/bind-completed"
	annBoundByController = "pv.kubernetes.io/bound-by-controller"
	annProvisionedBy     = "pv.kubernetes.io/provisioned-by"
	// Provisioner is the provisioned-by value on the PVs the kubelet creates.
	Provisioner = "sandbox.trawler.dev/kubelet"
)

// volumeName is the PV provisioned for a PVC. It is derived from the PVC's
// UID, so a PVC deleted and created again with the same name gets a new,
// empty volume, as with a real dynamic provisioner.
func volumeName(pvc *corev1.PersistentVolumeClaim) string { return "pvc-" + string(pvc.UID) }

// syncClaim plays the PV controller and a dynamic provisioner for one PVC
// key: every PVC gets its own PV (a folder under the kubelet's dir) and both
// become Bound; when the PVC is gone, its PV and folder are deleted
// (reclaim policy Delete). The KCM's pvc-protection and pv-protection
// controllers handle the finalizers, as in a real cluster.
func (k *Kubelet) syncClaim(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	pvc, err := k.claims.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return k.releaseVolumes(ctx, ns, name, "")
	}
	if err != nil {
		return err
	}
	if err := k.releaseVolumes(ctx, ns, name, pvc.UID); err != nil {
		return err
	}
	if pvc.DeletionTimestamp != nil || (pvc.Spec.VolumeName != "" && pvc.Spec.VolumeName != volumeName(pvc)) {
		return nil
	}
	return k.bind(ctx, pvc)
}

// bind creates the PVC's PV and binds both; each step is skipped when done.
func (k *Kubelet) bind(ctx context.Context, pvc *corev1.PersistentVolumeClaim) error {
	name := volumeName(pvc)
	if err := os.MkdirAll(k.VolumeDir(name), 0o755); err != nil {
		return fmt.Errorf("creating volume folder: %w", err)
	}
	pvs := k.client.CoreV1().PersistentVolumes()
	pv, err := k.volumes.Get(name)
	if apierrors.IsNotFound(err) {
		pv, err = pvs.Create(ctx, k.newVolume(pvc), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			pv, err = pvs.Get(ctx, name, metav1.GetOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("creating persistentvolume %s: %w", name, err)
	}
	if pv.Status.Phase != corev1.VolumeBound {
		pv = pv.DeepCopy()
		pv.Status.Phase = corev1.VolumeBound
		if _, err := pvs.UpdateStatus(ctx, pv, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("binding persistentvolume %s: %w", name, err)
		}
	}
	claims := k.client.CoreV1().PersistentVolumeClaims(pvc.Namespace)
	claim := pvc.Name
	if pvc.Spec.VolumeName == "" || pvc.Annotations[annBindCompleted] == "" {
		pvc = pvc.DeepCopy()
		pvc.Spec.VolumeName = name
		metav1.SetMetaDataAnnotation(&pvc.ObjectMeta, annBindCompleted, "yes")
		metav1.SetMetaDataAnnotation(&pvc.ObjectMeta, annBoundByController, "yes")
		if pvc, err = claims.Update(ctx, pvc, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("binding persistentvolumeclaim %s: %w", claim, err)
		}
	}
	if pvc.Status.Phase != corev1.ClaimBound {
		pvc = pvc.DeepCopy()
		pvc.Status.Phase = corev1.ClaimBound
		pvc.Status.AccessModes = pv.Spec.AccessModes
		pvc.Status.Capacity = pv.Spec.Capacity
		if _, err := claims.UpdateStatus(ctx, pvc, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("binding persistentvolumeclaim %s: %w", claim, err)
		}
	}
	return nil
}

func (k *Kubelet) newVolume(pvc *corev1.PersistentVolumeClaim) *corev1.PersistentVolume {
	size, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		size = resource.MustParse("1Gi")
	}
	modes := pvc.Spec.AccessModes
	if len(modes) == 0 {
		modes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	}
	class := ""
	if pvc.Spec.StorageClassName != nil {
		class = *pvc.Spec.StorageClassName
	}
	dirType := corev1.HostPathDirectoryOrCreate
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{
			Name:        volumeName(pvc),
			Annotations: map[string]string{annProvisionedBy: Provisioner, annBoundByController: "yes"},
		},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: size},
			AccessModes: modes,
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				HostPath: &corev1.HostPathVolumeSource{Path: k.VolumeDir(volumeName(pvc)), Type: &dirType},
			},
			ClaimRef: &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
				Namespace: pvc.Namespace, Name: pvc.Name, UID: pvc.UID},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			StorageClassName:              class,
			VolumeMode:                    pvc.Spec.VolumeMode,
		},
	}
}

// releaseVolumes deletes the PVs the kubelet provisioned for PVC
// namespace/name other than the one of UID keep, and their folders.
func (k *Kubelet) releaseVolumes(ctx context.Context, namespace, name string, keep types.UID) error {
	all, err := k.volumes.List(labels.Everything())
	if err != nil {
		return err
	}
	pvs := k.client.CoreV1().PersistentVolumes()
	for _, pv := range all {
		ref := pv.Spec.ClaimRef
		if pv.Annotations[annProvisionedBy] != Provisioner || ref == nil ||
			ref.Namespace != namespace || ref.Name != name || ref.UID == keep {
			continue
		}
		// The pv-protection controller only removes its finalizer from a
		// PV that is no longer Bound.
		if pv.Status.Phase == corev1.VolumeBound {
			pv = pv.DeepCopy()
			pv.Status.Phase = corev1.VolumeReleased
			if _, err := pvs.UpdateStatus(ctx, pv, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("releasing persistentvolume %s: %w", pv.Name, err)
			}
		}
		// The folder goes first: whoever sees the PV gone may rely on it.
		if err := os.RemoveAll(k.VolumeDir(pv.Name)); err != nil {
			return fmt.Errorf("deleting volume folder: %w", err)
		}
		if err := pvs.Delete(ctx, pv.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting persistentvolume %s: %w", pv.Name, err)
		}
	}
	return nil
}
