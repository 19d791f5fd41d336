package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// writeOCIArchive writes img as a tar of an OCI image layout: oci-layout,
// index.json and blobs/sha256/*. Unlike a docker-save archive, whose
// manifest containerd's importer regenerates (archive.ImportIndex), the
// manifest is stored byte for byte, so the node's image has exactly
// img.Digest(). index.json names it twice (io.containerd.image.name, which
// `ctr images import` and so `kind load image-archive` keep as is): ref, and
// <repository>@<digest>, the name a pod pinned by digest resolves locally
// (a pull would create the same two names). The digest goes to digestFile
// when set.
func writeOCIArchive(out, digestFile string, ref name.Tag, img v1.Image) error {
	manifest, err := img.RawManifest()
	if err != nil {
		return err
	}
	dgst, err := img.Digest()
	if err != nil {
		return err
	}
	mediaType, err := img.MediaType()
	if err != nil {
		return err
	}
	config, err := img.RawConfigFile()
	if err != nil {
		return err
	}
	configName, err := img.ConfigName()
	if err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	named := ref.Context().Digest(dgst.String())
	entry := func(imageName string) map[string]any {
		return map[string]any{
			"mediaType":   string(mediaType),
			"digest":      dgst.String(),
			"size":        len(manifest),
			"annotations": map[string]string{"io.containerd.image.name": imageName},
		}
	}
	// The tag first: an importer that keeps one name per manifest keeps it.
	index, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.index.v1+json",
		"manifests":     []any{entry(ref.String()), entry(named.String())},
	})
	if err != nil {
		return err
	}

	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	add := func(path string, size int64, r io.Reader) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: path, Mode: 0o644, Size: size}); err != nil {
			return err
		}
		_, err := io.Copy(tw, r)
		return err
	}
	addBytes := func(path string, b []byte) error { return add(path, int64(len(b)), bytes.NewReader(b)) }
	if err := addBytes("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return err
	}
	if err := addBytes("index.json", index); err != nil {
		return err
	}
	if err := addBytes("blobs/sha256/"+dgst.Hex, manifest); err != nil {
		return err
	}
	if err := addBytes("blobs/sha256/"+configName.Hex, config); err != nil {
		return err
	}
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return err
		}
		size, err := l.Size()
		if err != nil {
			return err
		}
		rc, err := l.Compressed()
		if err != nil {
			return err
		}
		err = add("blobs/sha256/"+d.Hex, size, rc)
		rc.Close()
		if err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if digestFile != "" {
		return os.WriteFile(digestFile, []byte(dgst.String()+"\n"), 0o644)
	}
	fmt.Fprintf(os.Stderr, "ociimage: %s is %s\n", ref, named)
	return nil
}
