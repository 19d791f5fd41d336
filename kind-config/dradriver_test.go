package kindconfig

import (
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/workload-aware/apps-harness/pkg/kwoknodes"
)

// TestDRADriverPublishesTheHarnessDevices keeps hack/dradriver/deploy.yaml,
// which gives kind clusters the DRA specs' devices, equal to what the local
// cluster publishes for its kwok nodes: the same DeviceClass, driver name and
// devices per node. Otherwise the DRA specs would ask for a class kind lacks,
// or find other device counts than on the local cluster.
func TestDRADriverPublishesTheHarnessDevices(t *testing.T) {
	docs := manifestDocs(t, "../hack/dradriver/deploy.yaml")
	class, ds := &resourcev1.DeviceClass{}, &appsv1.DaemonSet{}
	decodeDoc(t, docs, "DeviceClass", class)
	decodeDoc(t, docs, "DaemonSet", ds)
	want := kwoknodes.DeviceClass()
	if class.Name != want.Name || !equality.Semantic.DeepEqual(class.Spec, want.Spec) {
		t.Errorf("DeviceClass %s %+v, want pkg/kwoknodes' %s %+v", class.Name, class.Spec, want.Name, want.Spec)
	}
	args := ds.Spec.Template.Spec.Containers[0].Args
	for _, a := range []string{"--driver=" + kwoknodes.DeviceDriver, "--devices-per-node=" + strconv.Itoa(kwoknodes.DefaultTopology().DevicesPerNode)} {
		if !slices.Contains(args, a) {
			t.Errorf("driver args %v lack %s (pkg/kwoknodes)", args, a)
		}
	}
	// The KubeletSkew specs need devices on the skew worker, which
	// hack/e2e-kind.sh taints so that ordinary specs stay off it.
	script, err := os.ReadFile("../hack/e2e-kind.sh")
	if err != nil {
		t.Fatal(err)
	}
	const skewTaint = "was-harness.io/kubelet-skew"
	if !strings.Contains(string(script), "\nSKEW_TAINT="+skewTaint+" ") {
		t.Errorf("hack/e2e-kind.sh no longer taints the skew worker %s: keep this test and deploy.yaml's toleration in step", skewTaint)
	}
	if !slices.ContainsFunc(ds.Spec.Template.Spec.Tolerations, func(tol corev1.Toleration) bool {
		return tol.Key == skewTaint && tol.Operator == corev1.TolerationOpExists && tol.Effect == corev1.TaintEffectNoSchedule
	}) {
		t.Errorf("driver tolerations %v lack %s:NoSchedule (Exists): no devices on the kubelet-skew worker", ds.Spec.Template.Spec.Tolerations, skewTaint)
	}
	if img := ds.Spec.Template.Spec.Containers[0].Image; !strings.HasPrefix(img, "localhost/") {
		t.Errorf("driver image %q: hack/e2e-kind.sh builds and loads a localhost/ image; nothing can be pulled", img)
	}
}
