package kubelet

import (
	"context"
	"fmt"
	"path"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// writeProjected writes a projected volume: ServiceAccount tokens bound to
// the pod (from the TokenRequest API, as the kubelet gets them), ConfigMap
// and Secret keys and downward API fields, all into one folder. This is
// how a pod gets the kube-api-access-* volume that ServiceAccount
// admission adds (token, ca.crt, namespace).
func (k *Kubelet) writeProjected(ctx context.Context, pod *corev1.Pod, podIP, volume string, src *corev1.ProjectedVolumeSource) (string, error) {
	files := make(map[string][]byte)
	for _, s := range src.Sources {
		var err error
		switch {
		case s.ServiceAccountToken != nil:
			var token string
			token, err = k.serviceAccountToken(ctx, pod, s.ServiceAccountToken)
			files[s.ServiceAccountToken.Path] = []byte(token)
		case s.ConfigMap != nil:
			err = k.projectConfigMap(ctx, pod, s.ConfigMap, files)
		case s.Secret != nil:
			err = k.projectSecret(ctx, pod, s.Secret, files)
		case s.DownwardAPI != nil:
			err = downwardFiles(pod, podIP, s.DownwardAPI.Items, files)
		}
		if err != nil {
			return "", err
		}
	}
	return k.writeVolumeFiles(pod, volume, files)
}

// writeDownwardAPI writes a downwardAPI volume.
func (k *Kubelet) writeDownwardAPI(pod *corev1.Pod, podIP, volume string, src *corev1.DownwardAPIVolumeSource) (string, error) {
	files := make(map[string][]byte)
	if err := downwardFiles(pod, podIP, src.Items, files); err != nil {
		return "", err
	}
	return k.writeVolumeFiles(pod, volume, files)
}

func (k *Kubelet) serviceAccountToken(ctx context.Context, pod *corev1.Pod, src *corev1.ServiceAccountTokenProjection) (string, error) {
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: src.ExpirationSeconds,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	if src.Audience != "" {
		req.Spec.Audiences = []string{src.Audience}
	}
	tr, err := k.client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("requesting a token for serviceaccount %s: %w", sa, err)
	}
	return tr.Status.Token, nil
}

func (k *Kubelet) projectConfigMap(ctx context.Context, pod *corev1.Pod, src *corev1.ConfigMapProjection, files map[string][]byte) error {
	cm, err := k.client.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, src.Name, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) && optional(src.Optional) {
			return nil
		}
		return fmt.Errorf("configmap %s: %w", src.Name, err)
	}
	data := make(map[string][]byte)
	for key, v := range cm.Data {
		data[key] = []byte(v)
	}
	for key, v := range cm.BinaryData {
		data[key] = v
	}
	return project(data, src.Items, optional(src.Optional), files)
}

func (k *Kubelet) projectSecret(ctx context.Context, pod *corev1.Pod, src *corev1.SecretProjection, files map[string][]byte) error {
	s, err := k.client.CoreV1().Secrets(pod.Namespace).Get(ctx, src.Name, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) && optional(src.Optional) {
			return nil
		}
		return fmt.Errorf("secret %s: %w", src.Name, err)
	}
	return project(s.Data, src.Items, optional(src.Optional), files)
}

// project adds the listed items of data (every key when none are listed)
// to files.
func project(data map[string][]byte, items []corev1.KeyToPath, optional bool, files map[string][]byte) error {
	if len(items) == 0 {
		for key, v := range data {
			files[key] = v
		}
		return nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if optional {
				continue
			}
			return fmt.Errorf("no key %s", it.Key)
		}
		files[it.Path] = v
	}
	return nil
}

// downwardFiles adds the downward API items that name pod fields.
// Resource fields (limits, requests) are not simulated.
func downwardFiles(pod *corev1.Pod, podIP string, items []corev1.DownwardAPIVolumeFile, files map[string][]byte) error {
	for _, it := range items {
		if it.FieldRef == nil {
			return fmt.Errorf("downward API item %s: only fieldRef is simulated", it.Path)
		}
		v, err := podField(pod, it.FieldRef.FieldPath, podIP)
		if err != nil {
			return fmt.Errorf("downward API item %s: %w", it.Path, err)
		}
		files[path.Clean(it.Path)] = []byte(v)
	}
	return nil
}
