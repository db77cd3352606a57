package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
)

// InstallCRDs creates or updates the CustomResourceDefinitions in docs
// (YAML or JSON, several documents per item allowed) and waits until each
// is Established, i.e. served.
func InstallCRDs(ctx context.Context, cfg *rest.Config, docs ...[]byte) error {
	if len(docs) == 0 {
		return nil
	}
	client, err := apiextensions.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("building apiextensions client: %w", err)
	}
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	for _, doc := range docs {
		dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(doc), 4096)
		for {
			var crd apiextensionsv1.CustomResourceDefinition
			if err := dec.Decode(&crd); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return fmt.Errorf("decoding CRD: %w", err)
			}
			if crd.Name == "" {
				continue // an empty document
			}
			if crd.Kind != "CustomResourceDefinition" {
				return fmt.Errorf("installing CRDs: %s %s is not a CustomResourceDefinition", crd.Kind, crd.Name)
			}
			if err := applyCRD(ctx, client, &crd); err != nil {
				return err
			}
			err := WaitFor(ctx, 30*time.Second, 50*time.Millisecond, nil, func(ctx context.Context) error {
				got, err := crds.Get(ctx, crd.Name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				for _, c := range got.Status.Conditions {
					if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
						return nil
					}
				}
				return fmt.Errorf("CRD %s not established yet", crd.Name)
			})
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// applyCRD creates crd, or replaces the spec of an existing one so a dev
// sandbox restarted on its old folder gets the current schema.
func applyCRD(ctx context.Context, client apiextensions.Interface, crd *apiextensionsv1.CustomResourceDefinition) error {
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	_, err := crds.Create(ctx, crd, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		var old *apiextensionsv1.CustomResourceDefinition
		if old, err = crds.Get(ctx, crd.Name, metav1.GetOptions{}); err == nil {
			old.Spec = crd.Spec
			_, err = crds.Update(ctx, old, metav1.UpdateOptions{})
		}
	}
	if err != nil {
		return fmt.Errorf("installing CRD %s: %w", crd.Name, err)
	}
	return nil
}
