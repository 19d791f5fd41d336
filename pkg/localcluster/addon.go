package localcluster

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/workload-aware/apps-harness/api/cluster"
)

// Addon is software the cluster runs beside the control plane: its
// processes start, in order, once the control plane is up, and its
// manifests are applied when the apiserver (or the process they wait for) is
// ready. It is plain data, read from a descriptor file by LoadAddon and
// recorded in the state file, so another process can restart its components.
type Addon struct {
	// Name identifies the add-on in messages.
	Name string `json:"name"`
	// Components are its processes, started in this order.
	Components []AddonComponent `json:"components"`
	// Manifests are applied with server-side apply, each once its After
	// component is ready (or the apiserver, when After is empty).
	Manifests []Manifest `json:"manifests,omitempty"`
	// FeatureGates apply to its components that take feature gates, on top
	// of Config.FeatureGates: gates no Kubernetes binary knows.
	FeatureGates map[string]bool `json:"featureGates,omitempty"`
	// ReplacesControllers are kube-controller-manager controllers turned off
	// because the add-on runs its own.
	ReplacesControllers []string `json:"replacesControllers,omitempty"`
}

// AddonComponent is one process of an add-on. Its flags may use these
// variables, written $(NAME) as in a container's args:
//
//	KUBECONFIG            a kubeconfig authenticating as User
//	PORT                  its plain-HTTP port on 127.0.0.1 (HealthPath, MetricsPath)
//	SERVING_PORT          its HTTPS port on 127.0.0.1 (only with Serves)
//	TLS_CERT_FILE         its serving certificate, from the cluster's CA (only with Serves)
//	TLS_PRIVATE_KEY_FILE  the certificate's key (only with Serves)
//	CLIENT_CA_FILE        the CA of the API server's webhook client certificate (only with Serves)
//	WEBHOOK_CLIENT_NAME   that certificate's common name (only with Serves)
type AddonComponent struct {
	// Name is the component's name (its log is logs/<name>.log).
	Name Component `json:"name"`
	// Binary is the executable; LoadAddon resolves a relative path against
	// the bin directory it is given.
	Binary string `json:"binary"`
	// User is the user its kubeconfig authenticates as (client certificate);
	// RBAC, from the add-on's manifests, decides what it may do.
	User string `json:"user"`
	// Args are its flags, each "--name=value"; ComponentConfig.ExtraArgs
	// replace them by name.
	Args []string `json:"args,omitempty"`
	// TakesFeatureGates: it gets --feature-gates (Config.FeatureGates,
	// Addon.FeatureGates, then its ComponentConfig's).
	TakesFeatureGates bool `json:"takesFeatureGates,omitempty"`
	// HealthPath answers 200 on http://127.0.0.1:$(PORT) once it is ready.
	HealthPath string `json:"healthPath"`
	// MetricsPath, when set, serves Prometheus metrics on the same port.
	MetricsPath string `json:"metricsPath,omitempty"`
	// Serves names the Service ("namespace/name") that webhooks in the
	// add-on's manifests call. A local cluster routes no Services, so this
	// component serves HTTPS on $(SERVING_PORT) with a certificate from the
	// cluster's CA, and those webhooks are pointed at it by URL.
	Serves string `json:"serves,omitempty"`
}

// Manifest is a file of Kubernetes objects (YAML, "---" separated).
type Manifest struct {
	// File is the path relative to the descriptor.
	File string `json:"file"`
	// After names the add-on component that must be ready first; empty:
	// as soon as the apiserver is, before any add-on component starts (RBAC).
	After Component `json:"after,omitempty"`
	// Content is the file's text; LoadAddon reads it.
	Content string `json:"content,omitempty"`
}

// LoadAddon reads an add-on descriptor (YAML, decoded strictly into Addon)
// and the manifests it names. Relative binaries are resolved against binDir.
func LoadAddon(descriptor, binDir string) (Addon, error) {
	var a Addon
	data, err := os.ReadFile(descriptor)
	if err != nil {
		return a, fmt.Errorf("reading the add-on descriptor: %w", err)
	}
	if err := yaml.UnmarshalStrict(data, &a); err != nil {
		return a, fmt.Errorf("add-on descriptor %s: %w", descriptor, err)
	}
	for i := range a.Components {
		if b := a.Components[i].Binary; b != "" && !filepath.IsAbs(b) {
			a.Components[i].Binary = filepath.Join(binDir, b)
		}
	}
	for i := range a.Manifests {
		m := &a.Manifests[i]
		content, err := os.ReadFile(filepath.Join(filepath.Dir(descriptor), m.File))
		if err != nil {
			return a, fmt.Errorf("add-on %s: manifest: %w", a.Name, err)
		}
		m.Content = string(content)
	}
	if err := a.validate(); err != nil {
		return a, fmt.Errorf("add-on descriptor %s: %w", descriptor, err)
	}
	return a, nil
}

// LoadImplementation loads an implementation of the KEPs as an add-on: its
// processes and manifests from the descriptor, and from api/cluster the
// KEPs' own gates (on) and the kube-controller-manager controllers it
// replaces.
func LoadImplementation(descriptor, binDir string) (Addon, error) {
	a, err := LoadAddon(descriptor, binDir)
	if err != nil {
		return a, err
	}
	if a.FeatureGates == nil {
		a.FeatureGates = map[string]bool{}
	}
	maps.Copy(a.FeatureGates, cluster.ImplementationFeatureGates())
	for _, c := range cluster.ReplacedKubeControllers {
		if !slices.Contains(a.ReplacesControllers, c) {
			a.ReplacesControllers = append(a.ReplacesControllers, c)
		}
	}
	return a, nil
}

var addonVar = regexp.MustCompile(`\$\(([A-Z_]+)\)`)

// vars are the values of an add-on component's $(NAME) variables.
type vars map[string]string

// expand replaces $(NAME) in s; a name without a value is an error.
func (v vars) expand(s string) (string, error) {
	var missing []string
	out := addonVar.ReplaceAllStringFunc(s, func(m string) string {
		name := addonVar.FindStringSubmatch(m)[1]
		val, ok := v[name]
		if !ok {
			missing = append(missing, name)
		}
		return val
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("%q uses $(%s), which has no value here", s, strings.Join(missing, "), $("))
	}
	return out, nil
}

// placeholderVars are vars with every name an AddonComponent may use.
func placeholderVars(ac *AddonComponent) vars {
	v := vars{"KUBECONFIG": "k", "PORT": "1"}
	if ac.Serves != "" {
		v["SERVING_PORT"], v["TLS_CERT_FILE"], v["TLS_PRIVATE_KEY_FILE"] = "1", "c", "k"
		v["CLIENT_CA_FILE"], v["WEBHOOK_CLIENT_NAME"] = "ca", "n"
	}
	return v
}

// validate checks one add-on on its own.
func (a *Addon) validate() error {
	if a.Name == "" {
		return fmt.Errorf("the add-on has no name")
	}
	names := map[Component]bool{}
	for i := range a.Components {
		ac := &a.Components[i]
		where := fmt.Sprintf("add-on %s, component %q", a.Name, ac.Name)
		switch {
		case ac.Name == "" || slices.Contains(CoreComponents, ac.Name) || names[ac.Name]:
			return fmt.Errorf("%s: the name must be set and unique, and not one of %v", where, CoreComponents)
		case ac.Binary == "":
			return fmt.Errorf("%s: no binary", where)
		case ac.User == "":
			return fmt.Errorf("%s: no user for its kubeconfig", where)
		case !strings.HasPrefix(ac.HealthPath, "/"):
			return fmt.Errorf("%s: healthPath %q must be an absolute URL path", where, ac.HealthPath)
		case ac.Serves != "" && strings.Count(ac.Serves, "/") != 1:
			return fmt.Errorf("%s: serves %q is not namespace/name", where, ac.Serves)
		}
		names[ac.Name] = true
		for _, flag := range ac.Args {
			if _, err := parseArg(flag); err != nil {
				return fmt.Errorf("%s: %w", where, err)
			}
			if _, err := placeholderVars(ac).expand(flag); err != nil {
				return fmt.Errorf("%s: %w", where, err)
			}
		}
	}
	for _, m := range a.Manifests {
		if m.After != "" && !names[m.After] {
			return fmt.Errorf("add-on %s, manifest %s: after %q is not one of its components", a.Name, m.File, m.After)
		}
	}
	return nil
}

// validateAddons checks each add-on and that no two share a component name.
func (c *Config) validateAddons() error {
	seen := map[Component]string{}
	for i := range c.Addons {
		a := &c.Addons[i]
		if err := a.validate(); err != nil {
			return fmt.Errorf("Config.Addons[%d]: %w", i, err)
		}
		for _, ac := range a.Components {
			if other, dup := seen[ac.Name]; dup {
				return fmt.Errorf("Config.Addons[%d]: component %q is also add-on %s's", i, ac.Name, other)
			}
			seen[ac.Name] = a.Name
		}
	}
	return nil
}

// parseArg splits "--name=value" (or "--name").
func parseArg(s string) (arg, error) {
	rest, ok := strings.CutPrefix(s, "--")
	if !ok || rest == "" || strings.HasPrefix(rest, "=") {
		return arg{}, fmt.Errorf("flag %q is not --name=value", s)
	}
	k, v, _ := strings.Cut(rest, "=")
	return arg{k, v}, nil
}
