package k8s

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/randfill"

	trawlerv1 "github.com/trawlerhq/trawler/k8s/apis/trawler/v1"
)

func crdByKind(t *testing.T) map[string]*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crds, err := CRDObjects()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, crd := range crds {
		out[crd.Spec.Names.Kind] = crd
	}
	return out
}

func TestEmbeddedCRDs(t *testing.T) {
	crds := crdByKind(t)
	for kind, plural := range map[string]string{"CrawlJob": "crawljobs", "ProfileJob": "profilejobs"} {
		crd := crds[kind]
		if crd == nil {
			t.Fatalf("no CRD for %s", kind)
		}
		if crd.Name != plural+"."+trawlerv1.GroupName || len(crd.Spec.Versions) != 1 ||
			crd.Spec.Versions[0].Name != "v1" || crd.Spec.Versions[0].Subresources.Status == nil {
			t.Errorf("%s: unexpected CRD %s %+v", kind, crd.Name, crd.Spec.Versions)
		}
	}
	scale := crds["CrawlJob"].Spec.Versions[0].Subresources.Scale
	if scale == nil || scale.SpecReplicasPath != ".spec.scale" || scale.StatusReplicasPath != ".status.scale" {
		t.Errorf("crawljob scale subresource = %+v", scale)
	}
}

// The Helm chart installs its own copies of the CRDs; make generate
// writes both, and this catches a hand edit of either.
func TestChartCRDsMatch(t *testing.T) {
	chart := filepath.Join("..", "deploy", "helm", "trawler", "crds")
	entries, err := os.ReadDir(chart)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(CRDs()) {
		t.Errorf("chart has %d CRD files, k8s/crds has %d", len(entries), len(CRDs()))
	}
	for _, e := range entries {
		got, err := os.ReadFile(filepath.Join(chart, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		want, err := crdFiles.ReadFile("crds/" + e.Name())
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s differs from k8s/crds (run make generate): %v", e.Name(), err)
		}
	}
}

// A field added to the Go types without `make generate` would be pruned
// by the apiserver; every JSON field must be in the CRD schema.
func TestCRDSchemaCoversTypes(t *testing.T) {
	crds := crdByKind(t)
	for kind, obj := range map[string]any{"CrawlJob": trawlerv1.CrawlJob{}, "ProfileJob": trawlerv1.ProfileJob{}} {
		schema := crds[kind].Spec.Versions[0].Schema.OpenAPIV3Schema
		for _, part := range []string{"spec", "status"} {
			f, _ := reflect.TypeOf(obj).FieldByName(strings.ToUpper(part[:1]) + part[1:])
			prop := schema.Properties[part]
			checkSchemaFields(t, kind+"."+part, f.Type, &prop)
		}
	}
}

var ownPkg = reflect.TypeOf(trawlerv1.CrawlJob{}).PkgPath()

func checkSchemaFields(t *testing.T, path string, typ reflect.Type, schema *apiextensionsv1.JSONSchemaProps) {
	t.Helper()
	switch typ.Kind() {
	case reflect.Pointer, reflect.Slice:
		if typ.Kind() == reflect.Slice {
			if schema.Items == nil || schema.Items.Schema == nil {
				t.Errorf("%s: schema has no items", path)
				return
			}
			schema = schema.Items.Schema
		}
		checkSchemaFields(t, path+"[]", typ.Elem(), schema)
		return
	case reflect.Map:
		if schema.AdditionalProperties == nil || schema.AdditionalProperties.Schema == nil {
			t.Errorf("%s: schema has no additionalProperties", path)
			return
		}
		checkSchemaFields(t, path+"{}", typ.Elem(), schema.AdditionalProperties.Schema)
		return
	case reflect.Struct:
		if typ.PkgPath() != ownPkg {
			return // Kubernetes' own types (Time, Condition) are not ours to check
		}
	default:
		return
	}
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		prop, ok := schema.Properties[name]
		if !ok {
			t.Errorf("%s.%s is not in the CRD schema: run make generate", path, name)
			continue
		}
		checkSchemaFields(t, path+"."+name, f.Type, &prop)
	}
}

// A reference field added without `make generate` would be shared between
// an object and its DeepCopy, so a sync that edits its copy would corrupt
// the informer cache.
func TestDeepCopyDoesNotAlias(t *testing.T) {
	filler := randfill.New().NilChance(0).NumElements(1, 2)
	cj := &trawlerv1.CrawlJob{}
	filler.Fill(cj)
	checkNoAlias(t, "CrawlJob", reflect.ValueOf(cj).Elem(), reflect.ValueOf(cj.DeepCopy()).Elem())
	pj := &trawlerv1.ProfileJob{}
	filler.Fill(pj)
	checkNoAlias(t, "ProfileJob", reflect.ValueOf(pj).Elem(), reflect.ValueOf(pj.DeepCopy()).Elem())
}

var timeType = reflect.TypeOf(time.Time{})

func checkNoAlias(t *testing.T, path string, a, b reflect.Value) {
	t.Helper()
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() {
			return
		}
		if a.Pointer() == b.Pointer() {
			t.Errorf("%s is shared by DeepCopy: run make generate", path)
			return
		}
		checkNoAlias(t, path, a.Elem(), b.Elem())
	case reflect.Slice:
		if a.Len() == 0 {
			return
		}
		if a.Pointer() == b.Pointer() {
			t.Errorf("%s is shared by DeepCopy: run make generate", path)
			return
		}
		for i := range a.Len() {
			checkNoAlias(t, path+"[]", a.Index(i), b.Index(i))
		}
	case reflect.Map:
		if a.Len() == 0 {
			return
		}
		if a.Pointer() == b.Pointer() {
			t.Errorf("%s is shared by DeepCopy: run make generate", path)
			return
		}
		for _, k := range a.MapKeys() {
			checkNoAlias(t, path+"{}", a.MapIndex(k), b.MapIndex(k))
		}
	case reflect.Struct:
		if a.Type() == timeType {
			return // a time.Time is a value; its *Location is meant to be shared
		}
		for i := range a.NumField() {
			if a.Type().Field(i).IsExported() {
				checkNoAlias(t, path+"."+a.Type().Field(i).Name, a.Field(i), b.Field(i))
			}
		}
	}
}
