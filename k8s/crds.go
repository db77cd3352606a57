package k8s

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"maps"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiextensionsv1client "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"
)

// crdFiles are the manifests controller-gen writes from the markers in
// apis/ (hack/update-codegen.sh); the Helm chart ships copies of them.
//
//go:embed crds/*.yaml
var crdFiles embed.FS

// crdEstablishTimeout bounds the wait for a new CRD to be served; the
// apiserver usually needs well under a second.
const crdEstablishTimeout = time.Minute

// CRDs returns the YAML manifests of trawler's CustomResourceDefinitions,
// one per resource, in file-name order.
func CRDs() [][]byte {
	names, err := fs.Glob(crdFiles, "crds/*.yaml")
	if err != nil {
		panic(err) // the pattern is a constant
	}
	out := make([][]byte, 0, len(names))
	for _, name := range names {
		data, err := crdFiles.ReadFile(name)
		if err != nil {
			panic(err) // embedded files are always readable
		}
		out = append(out, data)
	}
	return out
}

// CRDObjects returns the CustomResourceDefinitions of CRDs decoded.
func CRDObjects() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	var out []*apiextensionsv1.CustomResourceDefinition
	for _, data := range CRDs() {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return nil, fmt.Errorf("decoding embedded CRD: %w", err)
		}
		out = append(out, crd)
	}
	return out, nil
}

// InstallCRDs creates trawler's CRDs, or updates them to the embedded
// version, and waits until the apiserver serves them. It is safe to run
// from several replicas at once.
func InstallCRDs(ctx context.Context, cfg *rest.Config) error {
	crds, err := CRDObjects()
	if err != nil {
		return err
	}
	return ApplyCRDs(ctx, cfg, crds...)
}

// ApplyCRDs creates or updates the given CRDs and waits until the
// apiserver serves them.
func ApplyCRDs(ctx context.Context, cfg *rest.Config, crds ...*apiextensionsv1.CustomResourceDefinition) error {
	client, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("building apiextensions client: %w", err)
	}
	api := client.ApiextensionsV1().CustomResourceDefinitions()
	for _, crd := range crds {
		if err := applyCRD(ctx, api, crd); err != nil {
			return err
		}
	}
	for _, crd := range crds {
		if err := waitEstablished(ctx, api, crd.Name); err != nil {
			return err
		}
	}
	return nil
}

// applyCRD creates crd or replaces the spec of the existing one. An
// unchanged update is a no-op in the apiserver, so no diff is needed.
func applyCRD(ctx context.Context, api apiextensionsv1client.CustomResourceDefinitionInterface, crd *apiextensionsv1.CustomResourceDefinition) error {
	_, err := api.Create(ctx, crd, metav1.CreateOptions{})
	if err == nil {
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating CRD %s: %w", crd.Name, err)
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := api.Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		// Keep labels and annotations others put on it (e.g. Helm's).
		if cur.Labels == nil && len(crd.Labels) > 0 {
			cur.Labels = map[string]string{}
		}
		maps.Copy(cur.Labels, crd.Labels)
		if cur.Annotations == nil && len(crd.Annotations) > 0 {
			cur.Annotations = map[string]string{}
		}
		maps.Copy(cur.Annotations, crd.Annotations)
		cur.Spec = crd.Spec
		_, err = api.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("updating CRD %s: %w", crd.Name, err)
	}
	return nil
}

// waitEstablished waits until the CRD's names are accepted and it is
// served, so that clients created next can use the resource at once.
func waitEstablished(ctx context.Context, api apiextensionsv1client.CustomResourceDefinitionInterface, name string) error {
	var last *apiextensionsv1.CustomResourceDefinition
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, crdEstablishTimeout, true,
		func(ctx context.Context) (bool, error) {
			crd, err := api.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			last = crd
			for _, c := range crd.Status.Conditions {
				if c.Type == apiextensionsv1.NamesAccepted && c.Status == apiextensionsv1.ConditionFalse {
					return false, fmt.Errorf("names not accepted: %s", c.Message)
				}
			}
			return crdCondition(crd, apiextensionsv1.Established), nil
		})
	if err != nil {
		if last != nil {
			return fmt.Errorf("waiting for CRD %s to be established (conditions %v): %w", name, last.Status.Conditions, err)
		}
		return fmt.Errorf("waiting for CRD %s to be established: %w", name, err)
	}
	return nil
}

func crdCondition(crd *apiextensionsv1.CustomResourceDefinition, t apiextensionsv1.CustomResourceDefinitionConditionType) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == t {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}
