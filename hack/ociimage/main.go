// Command ociimage packs local files into a container image without a
// registry or a container engine, with go-containerregistry, and writes it as
// an image archive that `docker load`, `ctr images import` and
// `kind load image-archive` read.
//
// It builds the images a kind node needs (the control-plane components,
// kube-proxy, etcd, pause, CoreDNS: each a static binary) and the reference
// implementation's image, from binaries built from the Go module proxy.
//
//	ociimage -name registry.k8s.io/pause:3.10.2 -out pause.tar -file _output/pause:/pause -entrypoint /pause
//
// A -base tarball (an uncompressed root filesystem) becomes the first layer:
// kube-proxy needs iptables and nft, which are not Go.
//
// It lives in its own module (hack/ociimage/go.mod) so the harness's go.mod
// does not grow a dependency only the kind path uses.
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

type list []string

// defaultCmd is the image's CMD (-cmd): agnhost's image runs `pause` when a pod names no args.
var defaultCmd []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(s string) error { *l = append(*l, s); return nil }

func main() {
	var files, envs, entrypoint list
	imageName := flag.String("name", "", "image reference, e.g. registry.k8s.io/pause:3.10.2")
	out := flag.String("out", "", "image archive to write")
	base := flag.String("base", "", "optional uncompressed root filesystem tarball, the first layer")
	user := flag.String("user", "", "optional user (uid[:gid]) the image runs as")
	flag.Var(&files, "file", "SRC:DST[:MODE] file to add (mode octal, default 0755); repeatable")
	flag.Var(&envs, "env", "K=V environment variable; repeatable")
	flag.Var(&entrypoint, "entrypoint", "entrypoint argument; repeatable, in order")
	flag.Var((*list)(&defaultCmd), "cmd", "default command argument (the image's CMD, what a pod's args replace); repeatable, in order")
	oci := flag.Bool("oci", false, "write an OCI image layout archive (index.json) instead of a docker-save one: containerd imports its manifest as is, so the digest below is the one the node stores; the image is named both -name and <repository>@<digest>")
	digestFile := flag.String("digest-file", "", "with -oci: write the image's manifest digest (sha256:...) to this file")
	flag.Parse()
	if *imageName == "" || *out == "" {
		fail(fmt.Errorf("-name and -out are required"))
	}
	if *digestFile != "" && !*oci {
		fail(fmt.Errorf("-digest-file needs -oci: containerd rewrites the manifest of a docker-save archive, so its digest is not known here"))
	}
	write := func(ref name.Tag, img v1.Image) error { return tarball.WriteToFile(*out, ref, img) }
	if *oci {
		write = func(ref name.Tag, img v1.Image) error { return writeOCIArchive(*out, *digestFile, ref, img) }
	}
	if err := run(*imageName, *base, *user, files, envs, entrypoint, write); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "ociimage:", err)
	os.Exit(1)
}

func run(imageName, base, user string, files, envs, entrypoint []string, write func(name.Tag, v1.Image) error) error {
	ref, err := name.NewTag(imageName, name.WeakValidation)
	if err != nil {
		return fmt.Errorf("image name %q: %w", imageName, err)
	}
	img := empty.Image
	if base != "" {
		layer, err := tarball.LayerFromFile(base)
		if err != nil {
			return fmt.Errorf("base layer %s: %w", base, err)
		}
		if img, err = mutate.AppendLayers(img, layer); err != nil {
			return err
		}
	}
	data, err := filesLayer(files)
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		return err
	}
	if img, err = mutate.AppendLayers(img, layer); err != nil {
		return err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", "amd64"
	cfg.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cfg.Config.Env = append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, envs...)
	cfg.Config.Entrypoint = entrypoint
	if len(defaultCmd) > 0 {
		cfg.Config.Cmd = defaultCmd // else the base's stays, as before -cmd existed
	}
	cfg.Config.User = user
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		return err
	}
	return write(ref, img)
}

// filesLayer is a tar of the given files (with their parent directories) and
// a world-writable /tmp, which some components expect.
func filesLayer(specs []string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	addDir := func(dir string, mode int64) error {
		if dir == "." || dir == "/" || dir == "" || dirs[dir] {
			return nil
		}
		dirs[dir] = true
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: mode})
	}
	if err := addDir("tmp", 01777); err != nil {
		return nil, err
	}
	for _, spec := range specs {
		parts := strings.Split(spec, ":")
		if len(parts) < 2 || len(parts) > 3 {
			return nil, fmt.Errorf("-file %q: want SRC:DST[:MODE]", spec)
		}
		mode := int64(0o755)
		if len(parts) == 3 {
			m, err := strconv.ParseInt(parts[2], 8, 32)
			if err != nil {
				return nil, fmt.Errorf("-file %q: mode: %w", spec, err)
			}
			mode = m
		}
		content, err := os.ReadFile(parts[0])
		if err != nil {
			return nil, err
		}
		dst := strings.TrimPrefix(path.Clean(parts[1]), "/")
		var parents []string
		for d := path.Dir(dst); d != "." && d != "/"; d = path.Dir(d) {
			parents = append([]string{d}, parents...)
		}
		for _, d := range parents {
			if err := addDir(d, 0o755); err != nil {
				return nil, err
			}
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: dst, Mode: mode, Size: int64(len(content))}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(content); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
