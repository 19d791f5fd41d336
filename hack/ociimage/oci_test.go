package main

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// TestOCIArchiveNamesTheManifestByItsDigest: the archive's manifest blob
// hashes to the digest written to -digest-file, index.json names it by tag
// and by <repository>@<digest> (what a digest-pinned pod resolves on the
// node), and every blob the manifest lists is in the archive with that
// digest, so containerd imports it without rewriting anything.
func TestOCIArchiveNamesTheManifestByItsDigest(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.WriteFile(bin, []byte("#!/bin/true\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, digestFile := filepath.Join(dir, "image.tar"), filepath.Join(dir, "image.tar.digest")
	const image = "localhost/was-controller-manager:dev"
	write := func(ref name.Tag, img v1.Image) error { return writeOCIArchive(out, digestFile, ref, img) }
	if err := run(image, "", "65532:65532", []string{bin + ":/bin"}, nil, []string{"/bin"}, write); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(digestFile)
	if err != nil {
		t.Fatal(err)
	}
	dgst := strings.TrimSpace(string(raw))
	if !strings.HasPrefix(dgst, "sha256:") || len(dgst) != len("sha256:")+64 {
		t.Fatalf("digest file %q", dgst)
	}

	files := map[string][]byte{}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files[h.Name] = b
	}
	if string(files["oci-layout"]) != `{"imageLayoutVersion":"1.0.0"}` {
		t.Errorf("oci-layout %q", files["oci-layout"])
	}
	blob := func(d string) []byte {
		t.Helper()
		b, ok := files["blobs/sha256/"+strings.TrimPrefix(d, "sha256:")]
		if !ok {
			t.Fatalf("blob %s missing", d)
		}
		sum := sha256.Sum256(b)
		if got := "sha256:" + hex.EncodeToString(sum[:]); got != d {
			t.Fatalf("blob %s hashes to %s", d, got)
		}
		return b
	}
	var index struct {
		Manifests []struct {
			Digest      string
			Size        int
			Annotations map[string]string
		}
	}
	if err := json.Unmarshal(files["index.json"], &index); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range index.Manifests {
		if m.Digest != dgst || m.Size != len(blob(m.Digest)) {
			t.Errorf("index entry %+v, want the manifest %s", m, dgst)
		}
		names = append(names, m.Annotations["io.containerd.image.name"])
	}
	if want := []string{image, "localhost/was-controller-manager@" + dgst}; strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("names %v, want %v", names, want)
	}
	var manifest struct {
		Config struct{ Digest string }
		Layers []struct{ Digest string }
	}
	if err := json.Unmarshal(blob(dgst), &manifest); err != nil {
		t.Fatal(err)
	}
	blob(manifest.Config.Digest)
	for _, l := range manifest.Layers {
		blob(l.Digest)
	}
	if len(manifest.Layers) != 1 {
		t.Errorf("%d layers, want 1", len(manifest.Layers))
	}
}
