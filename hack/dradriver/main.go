// Command dradriver is a DRA driver for kind clusters that publishes the
// harness's devices on real nodes: DevicesPerNode devices (gpu-0, gpu-1, ...)
// per node in one pool named after the node, of driver gpu.was-harness.io, as
// pkg/kwoknodes publishes them for the local cluster's kwok nodes. It has no
// hardware behind it: preparing a claim only reports the allocated devices
// back to the kubelet (no CDI device), which is all a pod that merely holds a
// claim needs. It lets the DRA specs run where kubelets run pods, and so
// exercises the kubelet's side of KEP-5729's PodGroup-level claims too.
//
// It runs as a DaemonSet (hack/dradriver/deploy.yaml), built from
// k8s.io/dynamic-resource-allocation's kubeletplugin helper.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
	"k8s.io/klog/v2"
)

func main() {
	driver := flag.String("driver", "gpu.was-harness.io", "driver name (pkg/kwoknodes.DeviceDriver)")
	devices := flag.Int("devices-per-node", 2, "devices published per node (pkg/kwoknodes Topology.DevicesPerNode)")
	node := flag.String("node-name", os.Getenv("NODE_NAME"), "this node (env NODE_NAME, from the downward API)")
	klog.InitFlags(nil)
	flag.Parse()
	if err := run(*driver, *node, *devices); err != nil {
		fmt.Fprintln(os.Stderr, "dradriver:", err)
		os.Exit(1)
	}
}

func run(driver, node string, devices int) error {
	if node == "" {
		return errors.New("--node-name (or NODE_NAME) is empty")
	}
	if devices < 1 || devices > 128 {
		return fmt.Errorf("--devices-per-node=%d: want 1..128 (a ResourceSlice holds at most 128 devices)", devices)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return fmt.Errorf("in-cluster config: %w", err)
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	// The helper listens in the kubelet's plugin directory of this driver,
	// which it does not create.
	if err := os.MkdirAll(filepath.Join(kubeletplugin.KubeletPluginsDir, driver), 0o750); err != nil {
		return err
	}
	d := &plugin{logger: klog.FromContext(ctx)}
	helper, err := kubeletplugin.Start(ctx, d,
		kubeletplugin.DriverName(driver),
		kubeletplugin.NodeName(node),
		kubeletplugin.KubeClient(client),
		kubeletplugin.HealthService(false),
	)
	if err != nil {
		return fmt.Errorf("starting the kubelet plugin: %w", err)
	}
	defer helper.Stop()
	slice := resourceslice.Slice{}
	for i := range devices {
		slice.Devices = append(slice.Devices, resourceapi.Device{Name: fmt.Sprintf("gpu-%d", i)})
	}
	if err := helper.PublishResources(ctx, resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{node: {Slices: []resourceslice.Slice{slice}}}}); err != nil {
		return fmt.Errorf("publishing ResourceSlices: %w", err)
	}
	klog.InfoS("serving", "driver", driver, "node", node, "devices", devices)
	<-ctx.Done()
	return nil
}

// plugin prepares nothing: the devices are names only.
type plugin struct{ logger klog.Logger }

func (p *plugin) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	out := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	for _, c := range claims {
		var r kubeletplugin.PrepareResult
		if c.Status.Allocation == nil {
			r.Err = fmt.Errorf("claim %s/%s is not allocated", c.Namespace, c.Name)
		} else {
			for _, res := range c.Status.Allocation.Devices.Results {
				r.Devices = append(r.Devices, kubeletplugin.Device{Requests: []string{res.Request}, PoolName: res.Pool, DeviceName: res.Device})
			}
		}
		klog.FromContext(ctx).Info("prepared", "claim", klog.KObj(c), "devices", len(r.Devices))
		out[c.UID] = r
	}
	return out, nil
}

func (p *plugin) UnprepareResourceClaims(ctx context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	out := make(map[types.UID]error, len(claims))
	for _, c := range claims {
		out[c.UID] = nil
	}
	return out, nil
}

func (p *plugin) HandleError(ctx context.Context, err error, msg string) {
	klog.FromContext(ctx).Error(err, msg)
}

func (p *plugin) WatchHealthStatus(context.Context, chan<- kubeletplugin.DeviceHealthReport) error {
	return kubeletplugin.ErrHealthNotSupported
}
