package k8s

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ApplyStorageSecret creates the Secret name in the crawler namespace
// with data (STORE_* variables), or replaces the data of the one there.
func (l *Launcher) ApplyStorageSecret(ctx context.Context, name string, data map[string]string) error {
	secrets := l.kube.CoreV1().Secrets(l.namespace)
	want := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"role": "storage"}}, StringData: data}
	_, err := secrets.Create(ctx, want, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		cur, gerr := secrets.Get(ctx, name, metav1.GetOptions{})
		if gerr != nil {
			return fmt.Errorf("reading secret %s: %w", name, gerr)
		}
		cur.Data, cur.StringData = nil, data
		_, err = secrets.Update(ctx, cur, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("writing secret %s: %w", name, err)
	}
	return nil
}

// DeleteStorageSecret deletes the Secret name; a missing one is fine.
func (l *Launcher) DeleteStorageSecret(ctx context.Context, name string) error {
	err := l.kube.CoreV1().Secrets(l.namespace).Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting secret %s: %w", name, err)
	}
	return nil
}
