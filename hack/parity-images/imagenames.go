//go:build ignore

// Prints the image names the e2e framework of the pinned Kubernetes expects
// for the parity specs' images (imageutils.GetE2EImage): agnhost, its previous
// version, busybox and pause, one "id name" per line.
package main

import (
	"fmt"

	imageutils "k8s.io/kubernetes/test/utils/image"
)

func main() {
	for _, id := range []struct {
		name string
		id   imageutils.ImageID
	}{{"agnhost", imageutils.Agnhost}, {"agnhost-prev", imageutils.AgnhostPrev}, {"busybox", imageutils.BusyBox}, {"pause", imageutils.Pause}} {
		fmt.Println(id.name, imageutils.GetE2EImage(id.id))
	}
}
