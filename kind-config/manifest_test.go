package kindconfig

import (
	"bytes"
	"os"
	"testing"

	"sigs.k8s.io/yaml"
)

// manifestDocs reads a multi-document manifest of a kind add-on (hack/*/deploy.yaml)
// and returns its documents by kind; a kind that appears twice fails the test,
// as the callers expect one object of each.
func manifestDocs(t *testing.T, path string) map[string][]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string][]byte{}
	for doc := range bytes.SplitSeq(data, []byte("\n---\n")) {
		var tm struct{ Kind string }
		if err := yaml.Unmarshal(doc, &tm); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if _, dup := docs[tm.Kind]; dup {
			t.Fatalf("%s: two %s documents", path, tm.Kind)
		}
		docs[tm.Kind] = doc
	}
	return docs
}

// decodeDoc strictly decodes the document of kind into obj; a missing
// document fails the test.
func decodeDoc(t *testing.T, docs map[string][]byte, kind string, obj any) {
	t.Helper()
	doc, ok := docs[kind]
	if !ok {
		t.Fatalf("the manifest has no %s", kind)
	}
	if err := yaml.UnmarshalStrict(doc, obj); err != nil {
		t.Fatalf("%s: %v", kind, err)
	}
}
