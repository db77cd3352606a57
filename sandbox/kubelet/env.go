package kubelet

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// containerEnv resolves a container's environment the way the kubelet
// does: the apiserver's address (when apiServer is set), then envFrom
// sources, then env entries in order, each value $(VAR)-expanded against
// what came before. ConfigMaps and Secrets are read fresh from the API, so
// a restarted container sees their current data.
func containerEnv(ctx context.Context, client kubernetes.Interface, pod *corev1.Pod, c *corev1.Container,
	podIP, apiServer string) (map[string]string, error) {
	env, err := kubernetesServiceEnv(apiServer)
	if err != nil {
		return nil, err
	}
	for _, from := range c.EnvFrom {
		data, err := envSource(ctx, client, pod.Namespace, from)
		if err != nil {
			return nil, err
		}
		for k, v := range data {
			env[from.Prefix+k] = v
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			env[e.Name] = expand(e.Value, env)
			continue
		}
		v, ok, err := envValueFrom(ctx, client, pod, e.ValueFrom, podIP)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", e.Name, err)
		}
		if ok {
			env[e.Name] = v
		}
	}
	return env, nil
}

func envSource(ctx context.Context, client kubernetes.Interface, ns string, from corev1.EnvFromSource) (map[string]string, error) {
	switch {
	case from.ConfigMapRef != nil:
		cm, err := client.CoreV1().ConfigMaps(ns).Get(ctx, from.ConfigMapRef.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) && optional(from.ConfigMapRef.Optional) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("envFrom configmap %s: %w", from.ConfigMapRef.Name, err)
		}
		return cm.Data, nil
	case from.SecretRef != nil:
		s, err := client.CoreV1().Secrets(ns).Get(ctx, from.SecretRef.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) && optional(from.SecretRef.Optional) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("envFrom secret %s: %w", from.SecretRef.Name, err)
		}
		data := make(map[string]string, len(s.Data))
		for k, v := range s.Data {
			data[k] = string(v)
		}
		return data, nil
	}
	return nil, nil
}

// envValueFrom returns the value of one valueFrom source; ok is false when
// an optional key is missing, which leaves the variable unset.
func envValueFrom(ctx context.Context, client kubernetes.Interface, pod *corev1.Pod, src *corev1.EnvVarSource,
	podIP string) (v string, ok bool, err error) {
	switch {
	case src.FieldRef != nil:
		v, err := podField(pod, src.FieldRef.FieldPath, podIP)
		return v, err == nil, err
	case src.ConfigMapKeyRef != nil:
		ref := src.ConfigMapKeyRef
		cm, err := client.CoreV1().ConfigMaps(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		var data map[string]string
		if err == nil {
			data = cm.Data
		}
		return keyValue("configmap", ref.Name, ref.Key, data, err, optional(ref.Optional))
	case src.SecretKeyRef != nil:
		ref := src.SecretKeyRef
		s, err := client.CoreV1().Secrets(pod.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		data := make(map[string]string)
		if err == nil {
			for k, v := range s.Data {
				data[k] = string(v)
			}
		}
		return keyValue("secret", ref.Name, ref.Key, data, err, optional(ref.Optional))
	}
	return "", false, fmt.Errorf("unsupported valueFrom (only fieldRef, configMapKeyRef, secretKeyRef)")
}

// keyValue picks key out of the data of a ConfigMap or Secret read with
// getErr. A missing object or key is an error unless the ref is optional.
func keyValue(kind, name, key string, data map[string]string, getErr error, optional bool) (string, bool, error) {
	if getErr != nil && !(apierrors.IsNotFound(getErr) && optional) {
		return "", false, fmt.Errorf("%s %s: %w", kind, name, getErr)
	}
	if v, ok := data[key]; ok {
		return v, true, nil
	}
	if optional {
		return "", false, nil
	}
	return "", false, fmt.Errorf("%s %s has no key %s", kind, name, key)
}

// podField resolves the fieldRef paths the downward API offers.
func podField(pod *corev1.Pod, path, podIP string) (string, error) {
	switch path {
	case "metadata.name":
		return pod.Name, nil
	case "metadata.namespace":
		return pod.Namespace, nil
	case "metadata.uid":
		return string(pod.UID), nil
	case "spec.nodeName":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	case "status.podIP", "status.podIPs":
		return podIP, nil
	case "status.hostIP", "status.hostIPs":
		return nodeIP, nil
	}
	for prefix, m := range map[string]map[string]string{
		"metadata.labels": pod.Labels, "metadata.annotations": pod.Annotations,
	} {
		if key, ok := strings.CutPrefix(path, prefix+"['"); ok && strings.HasSuffix(key, "']") {
			return m[strings.TrimSuffix(key, "']")], nil
		}
	}
	return "", fmt.Errorf("unsupported fieldRef %q", path)
}

func optional(b *bool) bool { return b != nil && *b }

// kubernetesServiceEnv is what the kubelet tells every container about the
// apiserver (the kubernetes Service); client-go's in-cluster config reads
// KUBERNETES_SERVICE_HOST and _PORT.
func kubernetesServiceEnv(apiServer string) (map[string]string, error) {
	env := make(map[string]string)
	if apiServer == "" {
		return env, nil
	}
	u, err := url.Parse(apiServer)
	if err != nil {
		return nil, fmt.Errorf("apiserver URL: %w", err)
	}
	host, port := u.Hostname(), u.Port()
	if port == "" {
		port = "443"
	}
	addr := net.JoinHostPort(host, port)
	env["KUBERNETES_SERVICE_HOST"], env["KUBERNETES_SERVICE_PORT"] = host, port
	env["KUBERNETES_SERVICE_PORT_HTTPS"] = port
	env["KUBERNETES_PORT"] = "tcp://" + addr
	env["KUBERNETES_PORT_"+port+"_TCP"] = "tcp://" + addr
	env["KUBERNETES_PORT_"+port+"_TCP_PROTO"] = "tcp"
	env["KUBERNETES_PORT_"+port+"_TCP_PORT"] = port
	env["KUBERNETES_PORT_"+port+"_TCP_ADDR"] = host
	return env, nil
}

// expand replaces $(VAR) with the value of VAR when it is defined and turns
// $$ into $, like the kubelet does for env values, command and args.
func expand(s string, vars map[string]string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
			continue
		case '(':
			if end := strings.IndexByte(s[i+2:], ')'); end >= 0 {
				name := s[i+2 : i+2+end]
				if v, ok := vars[name]; ok {
					b.WriteString(v)
					i += 2 + end
					continue
				}
			}
		}
		b.WriteByte('$')
	}
	return b.String()
}
