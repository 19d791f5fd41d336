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

	"k8s.io/client-go/tools/clientcmd"

	"github.com/workload-aware/apps-harness/framework"
	"github.com/workload-aware/apps-harness/testplan"
)

// conformanceCmd runs the suite's prerequisite check against an existing
// cluster on its own (the suite runs the same check before any spec):
//
//	was-harness conformance --check-only --kubeconfig K [--artifacts D] [--implements KEP-6276,KEP-6277] [--canary-timeout 2m] [--no-canary]
//	                        [--reconfigure-command C] [--controller-restart-command C] [--hook-dir D]
//
// It first calls each given hook once in check mode (framework/hooks.go),
// then prints what it saw, writes D/environment.json when --artifacts is
// given, and fails when something essential is missing. The suite itself
// runs with `make conformance KUBECONFIG=K`.
func conformanceCmd(args []string) error {
	fs := flag.NewFlagSet("conformance", flag.ContinueOnError)
	checkOnly := fs.Bool("check-only", false, "only check the prerequisites (required: the suite runs with make conformance KUBECONFIG=...)")
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of the cluster to check (required; $KUBECONFIG is not read, as in make e2e)")
	artifacts := fs.String("artifacts", "", "directory to write environment.json into (empty: do not write)")
	canaryTimeout := fs.Duration("canary-timeout", framework.DefaultCanaryTimeout, "how long the canaries (a gang Deployment for KEP-6276, a gang StatefulSet for KEP-6277) may wait for their Workloads")
	implementsFlag := fs.String("implements", os.Getenv("IMPLEMENTS"), "the KEPs the implementation under test implements: KEP-6276, KEP-6277 or both comma-separated; a declared KEP whose canary gets no Workload fails the check; empty or auto: found out by the canaries (env IMPLEMENTS)")
	noCanary := fs.Bool("no-canary", false, "skip the canaries (they create a temporary namespace with a 2-replica Deployment and a 2-replica StatefulSet); then no KEP is judged")
	// The suite's hooks, from the same environment variables the suite reads.
	hooks := framework.Config{}
	fs.StringVar(&hooks.ReconfigureCommand, "reconfigure-command", os.Getenv("RECONFIGURE_COMMAND"), "the suite's reconfigure hook, called once with check (env RECONFIGURE_COMMAND)")
	fs.StringVar(&hooks.ControllerRestartCommand, "controller-restart-command", os.Getenv("CONTROLLER_RESTART_COMMAND"), "the suite's controller restart hook, called once with check (env CONTROLLER_RESTART_COMMAND)")
	fs.StringVar(&hooks.FaultCommand, "fault-command", os.Getenv("FAULT_COMMAND"), "the suite's fault hook, called once with check (env FAULT_COMMAND)")
	fs.StringVar(&hooks.HookDir, "hook-dir", os.Getenv(framework.HookDirEnv), "directory a hook's relative path is resolved against (env "+framework.HookDirEnv+"; make sets it to the directory it was called from)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if !*checkOnly {
		return errors.New("conformance: pass --check-only; the suite itself runs with `make conformance KUBECONFIG=...`")
	}
	if *kubeconfig == "" {
		return errors.New("conformance: --kubeconfig is required")
	}
	implements, err := framework.ParseImplements(*implementsFlag)
	if err != nil {
		return fmt.Errorf("conformance: %w", err)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	// Up front: a hook that cannot run would fail every spec that needs it.
	if err := framework.CheckHooks(ctx, hooks.Hooks()); err != nil {
		return err
	}
	for _, h := range hooks.Hooks() {
		if h.Given != "" {
			fmt.Printf("hook %s: %q answers %q (runs %s)\n", h.Flag, h.Given, framework.HookCheck, h.Command)
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return fmt.Errorf("loading kubeconfig %s: %w", *kubeconfig, err)
	}
	env := framework.CheckPrerequisites(ctx, cfg, framework.PrereqOptions{Canary: !*noCanary, CanaryTimeout: *canaryTimeout, Implements: implements})
	env.Cluster = "existing"
	fmt.Print(testplan.EnvironmentMarkdown(env))
	if *artifacts != "" {
		if err := os.MkdirAll(*artifacts, 0o755); err != nil {
			return err
		}
		path := filepath.Join(*artifacts, testplan.EnvironmentFile)
		if err := testplan.WriteEnvironment(path, env); err != nil {
			return err
		}
		fmt.Printf("recorded in %s\n", path)
	}
	if err := framework.PrerequisiteError(env, *kubeconfig); err != nil {
		return err
	}
	fmt.Println("prerequisites met: the suite can run against this cluster")
	return nil
}
