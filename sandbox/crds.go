package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/trawlerhq/trawler/k8s"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
)

// installCRDs creates or updates the CustomResourceDefinitions in docs
// (YAML or JSON, several documents per item allowed) and waits until each
// is served.
func installCRDs(ctx context.Context, cfg *rest.Config, docs ...[]byte) error {
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, doc := range docs {
		dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(doc), 4096)
		for {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := dec.Decode(crd); errors.Is(err, io.EOF) {
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
			crds = append(crds, crd)
		}
	}
	return k8s.ApplyCRDs(ctx, cfg, crds...)
}
