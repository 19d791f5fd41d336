package intent

import (
	"strings"
	"testing"
)

func TestParseIsStrict(t *testing.T) {
	good := map[string]func(*DeploymentSchedulingConfiguration) bool{
		`{}`:                               func(c *DeploymentSchedulingConfiguration) bool { return !c.IsGang() && c.ExplicitMinCount() == nil },
		`{"schedulingPolicy":{"gang":{}}}`: func(c *DeploymentSchedulingConfiguration) bool { return c.IsGang() && c.ExplicitMinCount() == nil },
		`{"schedulingPolicy":{"gang":{"minCount":3}}}`: func(c *DeploymentSchedulingConfiguration) bool { return *c.ExplicitMinCount() == 3 },
		` {"disruptionMode":{"all":{}}} `:              func(c *DeploymentSchedulingConfiguration) bool { return c.DisruptionMode.All != nil },
	}
	for in, check := range good {
		c, err := Parse(in)
		if err != nil || !check(c) {
			t.Errorf("Parse(%s) = %+v, %v", in, c, err)
		}
	}
	bad := map[string]string{
		`null`: "JSON object",
		``:     "JSON object",
		`[]`:   "JSON object",
		`{"schedulingPolicy":{"gang":{}}, "x":1}`:                      `unknown field "x"`,
		`{"schedulingPolicy":{"gang":{"minCount":"3"}}}`:               "cannot unmarshal string",
		`{"schedulingPolicy":{}} {}`:                                   "after the JSON object",
		`{"podGroupTemplateRef":{}}`:                                   "unknown field",
		`{"SchedulingPolicy":{"gang":{}}}`:                             `unknown field "SchedulingPolicy"`,
		`{"schedulingPolicy":{"Gang":{}}}`:                             `unknown field "schedulingPolicy.Gang"`,
		`{"disruptionMode":{"all":{}},"disruptionMode":{"single":{}}}`: `duplicate field "disruptionMode"`,
	}
	for in, want := range bad {
		if _, err := Parse(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) error %v, want one containing %q", in, err, want)
		}
	}
}

func TestAnnotationRoundTrip(t *testing.T) {
	if c, err := FromAnnotations(map[string]string{"other": "x"}); c != nil || err != nil {
		t.Errorf("no annotation: %v, %v; want nil, nil", c, err)
	}
	_, err := FromAnnotations(map[string]string{DeploymentAnnotation: "{bad"})
	if pe, ok := err.(*ParseError); !ok || !strings.Contains(pe.Error(), DeploymentAnnotation) {
		t.Errorf("malformed annotation error %v does not name the annotation", err)
	}
	min := int32(2)
	in, _ := Parse(`{"schedulingPolicy":{"gang":{"minCount":2}},"schedulingConstraints":{"topology":[{"key":"zone"}]}}`)
	a, err := SetAnnotation(nil, in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := FromAnnotations(a)
	if err != nil || *out.ExplicitMinCount() != min || out.SchedulingConstraints.Topology[0].Key != "zone" {
		t.Errorf("round trip lost data: %+v, %v", out, err)
	}
	if a, _ = SetAnnotation(a, nil); len(a) != 0 {
		t.Errorf("SetAnnotation(nil) left %v", a)
	}
}
