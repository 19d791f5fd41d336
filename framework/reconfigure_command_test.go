package framework

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/workload-aware/apps-harness/pkg/localcluster"
)

// The hook gets the component's accumulated gates and runtime-config on every
// change, and the previous ones (empty: normal settings) on undo.
func TestHookReconfigurer(t *testing.T) {
	log := filepath.Join(t.TempDir(), "calls")
	saved := TestContext.ReconfigureCommand
	t.Cleanup(func() { TestContext.ReconfigureCommand = saved })
	TestContext.ReconfigureCommand = `echo "$1|$2|$3|$4|$5|$WAS_COMPONENT" >> ` + log
	h := &hookReconfigurer{current: map[localcluster.Component]hookSettings{}}
	ctx := context.Background()

	off := GateOn(WorkloadWithDeployment, false, ReferenceControllerManager)[0]
	undo1, err := h.apply(ctx, off)
	if err != nil {
		t.Fatal(err)
	}
	claims := GateOn(DRAWorkloadResourceClaims, false, ReferenceControllerManager)[0]
	undo2, err := h.apply(ctx, claims)
	if err != nil {
		t.Fatal(err)
	}
	api := ComponentChange{Component: localcluster.APIServer, ComponentConfig: localcluster.ComponentConfig{RuntimeConfig: map[string]string{"scheduling.k8s.io/v1beta1": "false"}}}
	undo3, err := h.apply(ctx, api)
	if err != nil {
		t.Fatal(err)
	}
	// Another version, with only the given gates, and flags (the downgrade to
	// stock kube-controller-manager, the skew kube-scheduler).
	old := ComponentChange{Component: localcluster.ControllerManager, Version: "v1.36.3", ComponentConfig: localcluster.ComponentConfig{
		OmitFeatureGates: []string{"GenericWorkload"}, ExtraArgs: map[string]string{"controllers": "*,bootstrapsigner", "v": "2"}}}
	if why := h.cannot(old); why != "" {
		t.Fatalf("a version and flags go through the hook, but cannot() says: %s", why)
	}
	undo4, err := h.apply(ctx, old)
	if err != nil {
		t.Fatal(err)
	}
	for _, undo := range []func(context.Context) error{undo4, undo3, undo2, undo1} {
		if err := undo(ctx); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := os.ReadFile(log)
	want := strings.Join([]string{
		"implementation-controllers|WorkloadWithDeployment=false||||implementation-controllers",
		"implementation-controllers|DRAWorkloadResourceClaims=false,WorkloadWithDeployment=false||||implementation-controllers",
		"kube-apiserver||scheduling.k8s.io/v1beta1=false|||kube-apiserver",
		"kube-controller-manager|||v1.36.3|--controllers=*,bootstrapsigner --v=2|kube-controller-manager",
		"kube-controller-manager|||||kube-controller-manager",
		"kube-apiserver|||||kube-apiserver",
		"implementation-controllers|WorkloadWithDeployment=false||||implementation-controllers",
		"implementation-controllers|||||implementation-controllers",
	}, "\n") + "\n"
	if string(got) != want {
		t.Fatalf("hook calls:\n%s\nwant:\n%s", got, want)
	}
	if len(h.current) != 0 {
		t.Fatalf("after every undo the hook state is %v, want empty (normal settings)", h.current)
	}
	if why := h.cannot(ComponentChange{Component: localcluster.Scheduler, ComponentConfig: localcluster.ComponentConfig{Binary: "/old/kube-scheduler"}}); why == "" {
		t.Fatal("a change of binary cannot go through the hook, but cannot() said it could")
	}
	if why := h.cannot(ComponentChange{Component: localcluster.Scheduler, ComponentConfig: localcluster.ComponentConfig{OmitFeatureGates: []string{"GenericWorkload"}}}); why == "" {
		t.Fatal("dropping the cluster's gates without another version cannot go through the hook, but cannot() said it could")
	}
}

// A hook given as a bare script path gets no positional arguments from
// `sh -c`; it reads the same values from the environment.
func TestHookScriptReadsEnvironment(t *testing.T) {
	dir := t.TempDir()
	log, script := filepath.Join(dir, "calls"), filepath.Join(dir, "hook.sh")
	body := "#!/bin/sh\necho \"$#|$WAS_COMPONENT|$WAS_FEATURE_GATES|$WAS_RUNTIME_CONFIG\" >> " + log + "\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	saved := TestContext.ReconfigureCommand
	t.Cleanup(func() { TestContext.ReconfigureCommand = saved })
	TestContext.ReconfigureCommand = script
	h := &hookReconfigurer{current: map[localcluster.Component]hookSettings{}}
	undo, err := h.apply(context.Background(), GateOn(WorkloadWithStatefulSet, false, ReferenceControllerManager)[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := undo(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(log)
	want := "0|implementation-controllers|WorkloadWithStatefulSet=false|\n0|implementation-controllers||\n"
	if string(got) != want {
		t.Fatalf("hook calls:\n%s\nwant:\n%s", got, want)
	}
}
