// Package deploy holds the kustomization that installs the reference
// implementation into a real cluster, and renders it in Go (kustomize's
// krusty, as `kubectl apply -k` does) for the unit test and the packaging
// e2e spec. The manifests are compiled in, so the suite binary checks them
// wherever it runs (also in the Sonobuoy image, without the source tree).
package deploy

import (
	"embed"
	"fmt"
	"io/fs"
	"path"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/workload-aware/apps-harness/controllers/config"
)

// Namespace is where the reference implementation runs.
const Namespace = "was-system"

//go:embed *.yaml
var files embed.FS

// Render renders the compiled-in kustomization. The in-memory tree mirrors
// the repository's: deploy/ and the controllers/config manifests it reuses
// (the unit test renders the files on disk too and compares).
func Render() ([]*unstructured.Unstructured, error) {
	mem := filesys.MakeFsInMemory()
	for dir, files := range map[string]fs.FS{"/repo/deploy": files, "/repo/controllers/config": config.Files} {
		if err := copyInto(mem, dir, files); err != nil {
			return nil, err
		}
	}
	return render(mem, "/repo/deploy")
}

func copyInto(mem filesys.FileSystem, dir string, files fs.FS) error {
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		return err
	}
	for _, e := range entries {
		data, err := fs.ReadFile(files, e.Name())
		if err != nil {
			return err
		}
		if err := mem.WriteFile(path.Join(dir, e.Name()), data); err != nil {
			return err
		}
	}
	return nil
}

// RenderDir renders the kustomization in dir on disk.
func RenderDir(dir string) ([]*unstructured.Unstructured, error) {
	return render(filesys.MakeFsOnDisk(), dir)
}

func render(fsys filesys.FileSystem, dir string) ([]*unstructured.Unstructured, error) {
	rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	var out []*unstructured.Unstructured
	for _, r := range rm.Resources() {
		// Through JSON, so numbers are int64 as in objects from a client
		// (kustomize's maps hold int, which unstructured cannot deep-copy).
		data, err := r.MarshalJSON()
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(data); err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, nil
}
