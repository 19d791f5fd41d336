package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// extraArgs collects repeated `--arg name=value` flags of `cluster restart`:
// flags of the restarted component, merged over its current ones
// (localcluster.ComponentConfig.ExtraArgs). A value may be empty
// (`--arg controllers=`) and may contain commas, which is why each flag is
// given on its own rather than as one comma-separated list.
type extraArgs map[string]string

func (a extraArgs) String() string {
	parts := make([]string, 0, len(a))
	for _, k := range slices.Sorted(maps.Keys(a)) {
		parts = append(parts, k+"="+a[k])
	}
	return strings.Join(parts, " ")
}

func (a extraArgs) Set(s string) error {
	name, value, ok := strings.Cut(s, "=")
	name = strings.TrimPrefix(name, "--")
	if !ok || name == "" {
		return fmt.Errorf("%q is not name=value (a flag without its leading --, e.g. controllers=)", s)
	}
	switch name {
	case "feature-gates", "runtime-config":
		return fmt.Errorf("%s: use --%s, which merges with the cluster's", name, name)
	}
	a[name] = value
	return nil
}
