package localcluster

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"
)

// fieldManager owns what the cluster applies from add-on manifests.
const fieldManager = "was-harness-localcluster"

// installManifests applies the add-ons' manifests that wait for after
// (empty: for the apiserver alone).
func (c *Cluster) installManifests(ctx context.Context, after Component) error {
	var apply func(context.Context, *unstructured.Unstructured) error
	for _, a := range c.cfg.Addons {
		for _, m := range a.Manifests {
			if m.After != after {
				continue
			}
			if apply == nil {
				var err error
				if apply, err = c.applier(); err != nil {
					return err
				}
			}
			objs, err := decodeManifest(m.Content)
			if err != nil {
				return fmt.Errorf("add-on %s, %s: %w", a.Name, m.File, err)
			}
			for _, obj := range objs {
				if err := c.routeWebhooks(obj); err != nil {
					return fmt.Errorf("add-on %s, %s: %w", a.Name, m.File, err)
				}
				if err := apply(ctx, obj); err != nil {
					return fmt.Errorf("add-on %s, %s: %w", a.Name, m.File, err)
				}
			}
			c.cfg.Logf("applied %s of add-on %s (%d objects)", m.File, a.Name, len(objs))
		}
	}
	return nil
}

// decodeManifest splits a "---" separated YAML file into objects.
func decodeManifest(content string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(content)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &obj.Object); err != nil {
			return nil, err
		}
		if len(obj.Object) == 0 {
			continue // a document of comments only
		}
		if obj.GetKind() == "" || obj.GetAPIVersion() == "" || obj.GetName() == "" {
			return nil, fmt.Errorf("an object without apiVersion, kind or name: %.80q", doc)
		}
		out = append(out, obj)
	}
}

// routeWebhooks points the webhooks of a webhook configuration that call a
// Service an add-on component Serves at that component's loopback port,
// trusting the cluster's CA (which signed its serving certificate).
func (c *Cluster) routeWebhooks(obj *unstructured.Unstructured) error {
	if obj.GetAPIVersion() != "admissionregistration.k8s.io/v1" ||
		(obj.GetKind() != "ValidatingWebhookConfiguration" && obj.GetKind() != "MutatingWebhookConfiguration") {
		return nil
	}
	hooks, _, err := unstructured.NestedSlice(obj.Object, "webhooks")
	if err != nil {
		return err
	}
	for i, h := range hooks {
		hook, _ := h.(map[string]any)
		svc, found, err := unstructured.NestedMap(hook, "clientConfig", "service")
		if err != nil || !found {
			continue // a URL webhook, or no clientConfig: left as written
		}
		service := fmt.Sprintf("%v/%v", svc["namespace"], svc["name"])
		name, ok := c.servingComponent(service)
		if !ok {
			return fmt.Errorf("%s %s calls Service %s, which no add-on component serves", obj.GetKind(), obj.GetName(), service)
		}
		ca, err := os.ReadFile(c.paths.crt("ca"))
		if err != nil {
			return err
		}
		path, _ := svc["path"].(string)
		url := fmt.Sprintf("https://%s:%d%s", loopback, c.ports.serving(name), path)
		hook["clientConfig"] = map[string]any{"url": url, "caBundle": base64.StdEncoding.EncodeToString(ca)}
		hooks[i] = hook
	}
	return unstructured.SetNestedSlice(obj.Object, hooks, "webhooks")
}

func (c *Cluster) servingComponent(service string) (Component, bool) {
	for _, a := range c.cfg.Addons {
		for _, ac := range a.Components {
			if ac.Serves == service {
				return ac.Name, true
			}
		}
	}
	return "", false
}

// applier returns a func that creates or updates an object with
// server-side apply, whatever its kind (the apiserver's discovery maps it).
func (c *Cluster) applier() (func(context.Context, *unstructured.Unstructured) error, error) {
	cfg, err := c.RESTConfig()
	if err != nil {
		return nil, err
	}
	client, err := c.adminClient()
	if err != nil {
		return nil, err
	}
	groups, err := restmapper.GetAPIGroupResources(client.Discovery())
	if err != nil {
		return nil, err
	}
	mapper := restmapper.NewDiscoveryRESTMapper(groups)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, obj *unstructured.Unstructured) error {
		gvk := obj.GroupVersionKind()
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return fmt.Errorf("%s %s: %w", gvk.Kind, obj.GetName(), err)
		}
		_, err = dyn.Resource(mapping.Resource).Namespace(obj.GetNamespace()).Apply(ctx, obj.GetName(), obj,
			metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
		if err != nil {
			return fmt.Errorf("applying %s %s/%s: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
		}
		return nil
	}, nil
}
