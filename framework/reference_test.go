package framework

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/workload-aware/apps-harness/pkg/localcluster"
)

// The specs name the reference add-on's components; the descriptor, read as
// the suite reads it, must have them.
func TestReferenceComponentsAreTheDescriptors(t *testing.T) {
	a, err := localcluster.LoadAddon(filepath.Join("..", DefaultAddon), "/out/bin")
	if err != nil {
		t.Fatal(err)
	}
	var names []localcluster.Component
	for _, c := range a.Components {
		names = append(names, c.Name)
	}
	for _, want := range []localcluster.Component{ReferenceWebhook, ReferenceControllerManager} {
		if !slices.Contains(names, want) {
			t.Errorf("%s names components %v, not %s", DefaultAddon, names, want)
		}
	}
}

func TestComponentChangeMergesOverTheCurrentSettings(t *testing.T) {
	change := GateOn(WorkloadWithDeployment, false, ReferenceWebhook)[0]
	now := localcluster.ComponentConfig{FeatureGates: map[string]bool{"A": true}, ExtraArgs: map[string]string{"v": "2"}}
	got := now.Merge(change.ComponentConfig)
	if !got.FeatureGates["A"] || got.FeatureGates[string(WorkloadWithDeployment)] || len(got.FeatureGates) != 2 || got.ExtraArgs["v"] != "2" {
		t.Errorf("merged %+v", got)
	}
	if len(now.FeatureGates) != 1 {
		t.Errorf("Merge modified the current settings: %v", now.FeatureGates)
	}
	if s := change.String(); s != "was-webhook with WorkloadWithDeployment=false" {
		t.Errorf("String() = %q", s)
	}
}
