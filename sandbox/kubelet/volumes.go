package kubelet

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// podVolumes materialises a pod's volumes and returns volume name → local
// folder. PVCs map to their volume's folder (see claims.go); ConfigMap,
// Secret, projected and downward API volumes are written as files, fresh
// for every container start like the kubelet's periodic refresh; every
// other volume type (emptyDir, and those the sandbox does not model) is an
// empty folder of the pod.
func (k *Kubelet) podVolumes(ctx context.Context, pod *corev1.Pod, podIP string) (map[string]string, error) {
	paths := make(map[string]string, len(pod.Spec.Volumes))
	for _, v := range pod.Spec.Volumes {
		var (
			path string
			err  error
		)
		switch {
		case v.PersistentVolumeClaim != nil:
			path, err = k.claimDir(pod.Namespace, v.PersistentVolumeClaim.ClaimName)
		case v.ConfigMap != nil:
			path, err = k.writeConfigMap(ctx, pod, v.Name, v.ConfigMap)
		case v.Secret != nil:
			path, err = k.writeSecret(ctx, pod, v.Name, v.Secret)
		case v.Projected != nil:
			path, err = k.writeProjected(ctx, pod, podIP, v.Name, v.Projected)
		case v.DownwardAPI != nil:
			path, err = k.writeDownwardAPI(pod, podIP, v.Name, v.DownwardAPI)
		default:
			path = filepath.Join(k.podDir(pod.UID), "volumes", v.Name)
			err = os.MkdirAll(path, 0o755)
		}
		if err != nil {
			return nil, fmt.Errorf("volume %s: %w", v.Name, err)
		}
		paths[v.Name] = path
	}
	return paths, nil
}

// claimDir is the folder of a bound PVC.
func (k *Kubelet) claimDir(namespace, name string) (string, error) {
	pvc, err := k.claims.PersistentVolumeClaims(namespace).Get(name)
	if err != nil {
		return "", fmt.Errorf("persistentvolumeclaim %s: %w", name, err)
	}
	if pvc.Spec.VolumeName == "" {
		return "", fmt.Errorf("persistentvolumeclaim %s is not bound", name)
	}
	dir := k.VolumeDir(pvc.Spec.VolumeName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating volume folder: %w", err)
	}
	return dir, nil
}

func (k *Kubelet) writeConfigMap(ctx context.Context, pod *corev1.Pod, volume string, src *corev1.ConfigMapVolumeSource) (string, error) {
	cm, err := k.client.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, src.Name, metav1.GetOptions{})
	data := make(map[string][]byte)
	switch {
	case err == nil:
		for key, v := range cm.Data {
			data[key] = []byte(v)
		}
		for key, v := range cm.BinaryData {
			data[key] = v
		}
	case !apierrors.IsNotFound(err) || !optional(src.Optional):
		return "", fmt.Errorf("configmap %s: %w", src.Name, err)
	}
	files := make(map[string][]byte)
	if err := project(data, src.Items, optional(src.Optional), files); err != nil {
		return "", err
	}
	return k.writeVolumeFiles(pod, volume, files)
}

func (k *Kubelet) writeSecret(ctx context.Context, pod *corev1.Pod, volume string, src *corev1.SecretVolumeSource) (string, error) {
	s, err := k.client.CoreV1().Secrets(pod.Namespace).Get(ctx, src.SecretName, metav1.GetOptions{})
	var data map[string][]byte
	switch {
	case err == nil:
		data = s.Data
	case !apierrors.IsNotFound(err) || !optional(src.Optional):
		return "", fmt.Errorf("secret %s: %w", src.SecretName, err)
	}
	files := make(map[string][]byte)
	if err := project(data, src.Items, optional(src.Optional), files); err != nil {
		return "", err
	}
	return k.writeVolumeFiles(pod, volume, files)
}

// writeVolumeFiles writes files (path in the volume → content) into the
// pod's folder for volume.
func (k *Kubelet) writeVolumeFiles(pod *corev1.Pod, volume string, files map[string][]byte) (string, error) {
	dir := filepath.Join(k.podDir(pod.UID), "volumes", volume)
	for name, v := range files {
		if !filepath.IsLocal(name) {
			return "", fmt.Errorf("path %q leaves the volume", name)
		}
		if err := writeFileAtomic(filepath.Join(dir, name), v); err != nil {
			return "", err
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("creating volume folder: %w", err)
	}
	return dir, nil
}

// writeFileAtomic replaces path by rename, so a program reading the file
// while the kubelet refreshes it never sees it half-written.
func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("creating volume folder: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("writing volume file: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("writing volume file: %w", err)
	}
	return nil
}

// containerMounts maps a container's mountPaths to local paths; a subPath
// points into its volume (a single file for a ConfigMap key).
func containerMounts(c *corev1.Container, volumes map[string]string, env map[string]string) (map[string]string, error) {
	mounts := make(map[string]string, len(c.VolumeMounts))
	for _, m := range c.VolumeMounts {
		path, ok := volumes[m.Name]
		if !ok {
			return nil, fmt.Errorf("volumeMount %s: no volume %s", m.MountPath, m.Name)
		}
		sub := m.SubPath
		if m.SubPathExpr != "" {
			sub = expand(m.SubPathExpr, env)
		}
		if sub != "" {
			if !filepath.IsLocal(sub) {
				return nil, fmt.Errorf("volumeMount %s: subPath %q leaves the volume", m.MountPath, sub)
			}
			path = filepath.Join(path, sub)
			// Like the kubelet, create a missing subPath as a folder.
			if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
				if err := os.MkdirAll(path, 0o755); err != nil {
					return nil, fmt.Errorf("volumeMount %s: %w", m.MountPath, err)
				}
			}
		}
		mounts[m.MountPath] = path
	}
	return mounts, nil
}
