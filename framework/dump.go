package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"
)

// DumpNamespace writes the namespace's pods, Deployments, ReplicaSets,
// StatefulSets, Workloads, PodGroups, ResourceClaims and events (plus the
// nodes) as YAML under TestContext.Artifacts/failures/<subdir>, and returns the
// directory. A resource that cannot be listed (an API not served) is recorded
// as the error, never skipped silently.
func DumpNamespace(ctx context.Context, cs kubernetes.Interface, ns, subdir string) string {
	dir := filepath.Join(TestContext.Artifacts, "failures", subdir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Sprintf("(cannot create %s: %v)", dir, err)
	}
	opts := metav1.ListOptions{}
	lists := map[string]func() (any, error){
		"pods":           func() (any, error) { return cs.CoreV1().Pods(ns).List(ctx, opts) },
		"deployments":    func() (any, error) { return cs.AppsV1().Deployments(ns).List(ctx, opts) },
		"replicasets":    func() (any, error) { return cs.AppsV1().ReplicaSets(ns).List(ctx, opts) },
		"statefulsets":   func() (any, error) { return cs.AppsV1().StatefulSets(ns).List(ctx, opts) },
		"workloads":      func() (any, error) { return cs.SchedulingV1beta1().Workloads(ns).List(ctx, opts) },
		"podgroups":      func() (any, error) { return cs.SchedulingV1beta1().PodGroups(ns).List(ctx, opts) },
		"resourceclaims": func() (any, error) { return cs.ResourceV1().ResourceClaims(ns).List(ctx, opts) },
		"nodes":          func() (any, error) { return cs.CoreV1().Nodes().List(ctx, opts) },
	}
	for name, list := range lists {
		obj, err := list()
		var data []byte
		if err != nil {
			data = []byte(fmt.Sprintf("# listing %s failed: %v\n", name, err))
		} else if data, err = yaml.Marshal(obj); err != nil {
			data = []byte(fmt.Sprintf("# encoding %s failed: %v\n", name, err))
		}
		_ = os.WriteFile(filepath.Join(dir, name+".yaml"), data, 0o644)
	}
	_ = os.WriteFile(filepath.Join(dir, "events.txt"), []byte(eventsTable(ctx, cs, ns)), 0o644)
	return dir
}

// eventsTable renders the namespace's events oldest first, one line each.
func eventsTable(ctx context.Context, cs kubernetes.Interface, ns string) string {
	events, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Sprintf("listing events failed: %v\n", err)
	}
	items := events.Items
	sort.SliceStable(items, func(i, j int) bool {
		return items[i].LastTimestamp.Before(&items[j].LastTimestamp)
	})
	var b strings.Builder
	for _, e := range items {
		fmt.Fprintf(&b, "%s\t%s\t%s/%s\t%s\t%s\n", e.LastTimestamp.Format("15:04:05"), e.Type,
			e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
	}
	return b.String()
}
