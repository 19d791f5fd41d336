package config

import (
	"io/fs"
	"os"
	"slices"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestKustomizationListsEveryManifest: the kustomization deploy/ reuses
// lists exactly the embedded manifests (the add-on descriptor is not one).
func TestKustomizationListsEveryManifest(t *testing.T) {
	data, err := fs.ReadFile(Files, "kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(data, &k); err != nil {
		t.Fatal(err)
	}
	entries, err := fs.ReadDir(Files, ".")
	if err != nil {
		t.Fatal(err)
	}
	var embedded []string
	for _, e := range entries {
		if e.Name() != "kustomization.yaml" {
			embedded = append(embedded, e.Name())
		}
		onDisk, err := os.ReadFile(e.Name())
		if err != nil {
			t.Fatal(err)
		}
		if compiled, _ := fs.ReadFile(Files, e.Name()); string(compiled) != string(onDisk) {
			t.Errorf("%s: the compiled-in copy differs from the file", e.Name())
		}
	}
	slices.Sort(k.Resources)
	if !slices.Equal(k.Resources, embedded) {
		t.Errorf("kustomization.yaml lists %v, the package embeds %v", k.Resources, embedded)
	}
}
