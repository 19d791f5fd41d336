package testplan

import (
	"errors"
	"io/fs"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestReadGoTestJSON(t *testing.T) {
	res, err := ReadGoTestJSON(writeFile(t, "unit.json", goTestFixture))
	if err != nil {
		t.Fatalf("ReadGoTestJSON: %v", err)
	}
	type want struct {
		status Status
		reason string
		ids    []string
	}
	got := map[string][]want{}
	for _, r := range res {
		got[r.Name] = append(got[r.Name], want{r.Status, r.Reason, r.IDs})
	}
	for name, w := range map[string][]want{
		"TestBuild/D-U1_compiles_constraints": {{StatusPass, "", []string{"D-U1"}}},
		"TestBuild/D-U2_skip":                 {{StatusSkip, "u_test.go:7: needs a kubelet", []string{"D-U2"}}},
		"TestBuild/D-U3_fail":                 {{StatusFail, "u_test.go:8: bad", []string{"D-U3"}}},
		// The parent names no id: its FAIL counts for nothing.
		"TestBuild": {{StatusFail, "", nil}},
		// An id in the skip message is not an id in the test name.
		"TestSkipTop":                   {{StatusSkip, "u_test.go:10: S-U1 not yet: reason", nil}},
		"TestMulti/S-U14_two_workloads": {{StatusSkip, "multi_test.go:20: requires the events recorder", []string{"S-U14"}}},
		"TestMulti/S-U15_silent_skip":   {{StatusSkip, "(no reason given)", []string{"S-U15"}}},
		"TestRepeat/S-U16":              {{StatusPass, "", []string{"S-U16"}}, {StatusFail, "repeat_test.go:5: flaked", []string{"S-U16"}}},
		"TestHang/S-U17_hangs":          {{StatusFail, "started but no result recorded (package failed: panic: test timed out after 10m0s)", []string{"S-U17"}}},
		"package":                       {{StatusFail, "build failed: bf/bf_test.go:5:28: undefined: undefined", nil}},
	} {
		if !reflect.DeepEqual(got[name], w) {
			t.Errorf("%s: got %+v, want %+v", name, got[name], w)
		}
	}
	if len(res) != 11 {
		t.Errorf("got %d results, want 11: %+v", len(res), res)
	}
	for _, r := range res {
		if r.SuiteLevel != (r.Name == "package") {
			t.Errorf("%s: SuiteLevel = %v", r.Name, r.SuiteLevel)
		}
		if r.Name == "package" && r.Suite != "example.com/gk/bf" {
			t.Errorf("build failure attributed to %q, want example.com/gk/bf", r.Suite)
		}
	}

	for _, r := range res {
		if r.Status != StatusFail && r.Output != "" {
			t.Errorf("%s: %s with output %q: only failures keep their log", r.Name, r.Status, r.Output)
		}
	}
	if out := byName(res)["TestBuild/D-U3_fail"].Output; !strings.Contains(out, "u_test.go:8: bad") || !strings.Contains(out, "--- FAIL") {
		t.Errorf("failed test output %q", out)
	}
	if out := byName(res)["package"].Output; !strings.Contains(out, "undefined: undefined") {
		t.Errorf("build failure output %q, want the compiler's message", out)
	}

	rep := Aggregate(loadPlan(t), res, Options{Mode: ModeHarness})
	for id, st := range map[string]Status{"D-U1": StatusPass, "D-U2": StatusSkip, "D-U3": StatusFail, "S-U1": StatusMissing, "S-U14": StatusSkip, "S-U16": StatusFail, "S-U17": StatusFail} {
		if r, _ := rep.Get(id); r.Status != st {
			t.Errorf("%s: %s, want %s", id, r.Status, st)
		}
	}
}

func TestReadGoTestJSONErrors(t *testing.T) {
	_, err := ReadGoTestJSON(filepath.Join(t.TempDir(), "absent.json"))
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: err = %v, want fs.ErrNotExist", err)
	}
	for name, doc := range map[string]string{
		"plain text":   "{\"Action\":\"run\",\"Test\":\"TestA\"}\nok  \texample.com/x\t0.1s\n",
		"broken json":  "{\"Action\":\"run\",\"Test\":\"TestA\"}\n{\"Action\":\"pass\",\n",
		"wrong type":   "{\"Action\":\"pass\",\"Test\":17}\n",
		"no action":    "{\"Test\":\"TestA\"}\n",
		"junit passed": junitFixture,
	} {
		p := writeFile(t, "bad.json", doc)
		_, err := ReadGoTestJSON(p)
		if err == nil {
			t.Errorf("%s: ReadGoTestJSON succeeded, want error", name)
			continue
		}
		if !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "line ") {
			t.Errorf("%s: error %q should name %s and the line", name, err, p)
		}
	}
	// An empty stream is not malformed: it contributes nothing.
	res, err := ReadGoTestJSON(writeFile(t, "empty.json", "\n"))
	if err != nil || len(res) != 0 {
		t.Errorf("empty stream: %v, %v", res, err)
	}
}
