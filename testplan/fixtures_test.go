package testplan

import (
	"os"
	"path/filepath"
	"testing"
)

// junitFixture is trimmed output of Ginkgo v2.32.0 --ginkgo.junit-report for
// a suite run with RunSpecs(t, "A Suite", Label("suite-label",
// "Feature:GenericWorkload")): passed, failed, Skip("needs a kubelet"), PIt,
// an id only in the spec text, a panic, a timeout and a semver constraint.
const junitFixture = `<?xml version="1.0" encoding="UTF-8"?>
  <testsuites tests="9" disabled="2" errors="1" failures="2" time="0.0015">
      <testsuite name="A Suite" package="/tmp/gk/a" tests="9" disabled="1" skipped="1" errors="1" failures="2" time="0.0015" timestamp="2026-11-30T06:11:03">
          <properties>
              <property name="SuiteSucceeded" value="false"></property>
              <property name="SuiteHasProgrammaticFocus" value="false"></property>
              <property name="SpecialSuiteFailureReason" value=""></property>
              <property name="SuiteLabels" value="[suite-label,Feature:GenericWorkload]"></property>
              <property name="SuiteSemVerConstraints" value="[]"></property>
              <property name="SuiteComponentSemVerConstraints" value="[]"></property>
              <property name="RandomSeed" value="1796019063"></property>
              <property name="LabelFilter" value=""></property>
          </properties>
          <testcase name="[BeforeSuite]" classname="A Suite" status="passed" time="9.5892e-05">
              <system-err>&gt; Enter [BeforeSuite] TOP-LEVEL - /tmp/gk/a/a_test.go:15</system-err>
          </testcase>
          <testcase name="[It] Deployment D-I2 creation ordering [kep-6276, D-I2, Serial]" classname="A Suite" status="passed" time="1.1217e-05">
          </testcase>
          <testcase name="[It] Deployment fails [kep-6276, D-I3]" classname="A Suite" status="failed" time="0.000240507">
              <failure message="Expected&#xA;    &lt;int&gt;: 1&#xA;to equal&#xA;    &lt;int&gt;: 2" type="failed">[FAILED] Expected&#xA;    &lt;int&gt;: 1&#xA;to equal&#xA;    &lt;int&gt;: 2&#xA;In [It] at: /tmp/gk/a/a_test.go:19 @ 11/30/26 06:11:03.879&#xA;</failure>
              <system-err>&gt; Enter [It] fails - /tmp/gk/a/a_test.go:19 @ 11/30/26 06:11:03.878&#xA;</system-err>
          </testcase>
          <testcase name="[It] Deployment skips [kep-6276, D-E1]" classname="A Suite" status="skipped" time="0.000139898">
              <skipped message="skipped - needs a kubelet"></skipped>
          </testcase>
          <testcase name="[It] Deployment pending one [kep-6276, D-E2]" classname="A Suite" status="pending" time="0">
              <skipped message="pending"></skipped>
          </testcase>
          <testcase name="[It] Deployment [D-E3] in text [kep-6276]" classname="A Suite" status="passed" time="3.2148e-05">
          </testcase>
          <testcase name="[It] Deployment panics [kep-6276, D-E4]" classname="A Suite" status="panicked" time="7.7905e-05">
              <error message="boom" type="panicked">[PANICKED] Test Panicked&#xA;In [It] at: /tmp/gk/a/a_test.go:23&#xA;&#xA;boom&#xA;</error>
          </testcase>
          <testcase name="[It] Deployment times out [kep-6276, D-E5] [&gt;= 1.36.0]" classname="A Suite" status="timedout" time="1">
              <failure message="A spec timeout occurred" type="timedout">[TIMEDOUT] A spec timeout occurred</failure>
          </testcase>
          <testcase name="[It] StatefulSet | piped [S-E1]" classname="A Suite" status="passed" time="0.1">
          </testcase>
          <testcase name="[It] StatefulSet typo [S-E99]" classname="A Suite" status="passed" time="0.1">
          </testcase>
      </testsuite>
  </testsuites>
`

// junitBeforeSuiteFailed: a second suite whose SynchronizedBeforeSuite
// failed. Ginkgo then reports no specs at all; this fixture additionally has
// a spec Ginkgo skipped without a reason, one the user skipped with a reason,
// and an id in the suite labels.
const junitBeforeSuiteFailed = `<?xml version="1.0" encoding="UTF-8"?>
  <testsuites tests="4" disabled="2" errors="0" failures="1" time="0.0002">
      <testsuite name="B Suite" package="/tmp/gk/b" tests="4" disabled="0" skipped="2" errors="0" failures="1" time="0.0002" timestamp="2026-11-30T06:11:06">
          <properties>
              <property name="SuiteSucceeded" value="false"></property>
              <property name="SuiteLabels" value="[S-P6]"></property>
          </properties>
          <testcase name="[SynchronizedBeforeSuite]" classname="B Suite" status="failed" time="0.00021529">
              <failure message="cluster not reachable&#xA;Expected&#xA;    &lt;bool&gt;: true&#xA;to be false" type="failed">[FAILED] cluster not reachable</failure>
          </testcase>
          <testcase name="[It] StatefulSet gang [S-I2]" classname="B Suite" status="skipped" time="0">
              <skipped message="skipped"></skipped>
          </testcase>
          <testcase name="[It] StatefulSet user skip [S-I3]" classname="B Suite" status="skipped" time="0">
              <skipped message="skipped - no GPU nodes"></skipped>
          </testcase>
          <testcase name="[AfterSuite]" classname="B Suite" status="passed" time="0">
          </testcase>
      </testsuite>
  </testsuites>
`

// goTestFixture is `go test -json` output (Go 1.26) for:
//
//	func TestBuild(t *testing.T) {
//		t.Run("D-U1_compiles_constraints", func(t *testing.T) {})
//		t.Run("D-U2 skip", func(t *testing.T) { t.Log("some log"); t.Skip("needs a kubelet") })
//		t.Run("D-U3_fail", func(t *testing.T) { t.Error("bad") })
//	}
//	func TestSkipTop(t *testing.T) { t.Skipf("S-U1 not yet: %s", "reason") }
//
// plus a multi-line skip, a test that never finished, a repeated run
// (-count=2) and a package that failed to build.
const goTestFixture = `{"Time":"2026-11-30T06:11:06.604374963Z","Action":"start","Package":"example.com/gk/u"}
{"Time":"2026-11-30T06:11:06.60796456Z","Action":"run","Package":"example.com/gk/u","Test":"TestBuild"}
{"Time":"2026-11-30T06:11:06.607985331Z","Action":"output","Package":"example.com/gk/u","Test":"TestBuild","Output":"=== RUN   TestBuild\n"}
{"Time":"2026-11-30T06:11:06.608050147Z","Action":"run","Package":"example.com/gk/u","Test":"TestBuild/D-U1_compiles_constraints"}
{"Time":"2026-11-30T06:11:06.608052961Z","Action":"output","Package":"example.com/gk/u","Test":"TestBuild/D-U1_compiles_constraints","Output":"=== RUN   TestBuild/D-U1_compiles_constraints\n"}
{"Time":"2026-11-30T06:11:06.608061203Z","Action":"output","Package":"example.com/gk/u","Test":"TestBuild/D-U1_compiles_constraints","Output":"--- PASS: TestBuild/D-U1_compiles_constraints (0.00s)\n"}
{"Time":"2026-11-30T06:11:06.608064729Z","Action":"pass","Package":"example.com/gk/u","Test":"TestBuild/D-U1_compiles_constraints","Elapsed":0}
{"Time":"2026-11-30T06:11:06.608069316Z","Action":"run","Package":"example.com/gk/u","Test":"TestBuild/D-U2_skip"}
{"Time":"2026-11-30T06:11:06.608071609Z","Action":"output","Package":"example.com/gk/u","Test":"TestBuild/D-U2_skip","Output":"=== RUN   TestBuild/D-U2_skip\n"}
{"Time":"2026-11-30T06:11:06.608075765Z","Action":"output","Package":"example.com/gk/u","Test":"TestBuild/D-U2_skip","Output":"    u_test.go:7: some log\n"}
{"Time":"2026-11-30T06:11:06.608078149Z","Action":"output","Package":"example.com/gk/u","Test":"TestBuild/D-U2_skip","Output":"    u_test.go:7: needs a kubelet\n"}
{"Time":"2026-11-30T06:11:06.608081353Z","Action":"output","Package":"example.com/gk/u","Test":"TestBuild/D-U2_skip","Output":"--- SKIP: TestBuild/D-U2_skip (0.00s)\n"}
{"Time":"2026-11-30T06:11:06.608083837Z","Action":"skip","Package":"example.com/gk/u","Test":"TestBuild/D-U2_skip","Elapsed":0}
{"Time":"2026-11-30T06:11:06.60808607Z","Action":"run","Package":"example.com/gk/u","Test":"TestBuild/D-U3_fail"}
{"Time":"2026-11-30T06:11:06.608087993Z","Action":"output","Package":"example.com/gk/u","Test":"TestBuild/D-U3_fail","Output":"=== RUN   TestBuild/D-U3_fail\n"}
{"Time":"2026-11-30T06:11:06.608090136Z","Action":"output","Package":"example.com/gk/u","Test":"TestBuild/D-U3_fail","Output":"    u_test.go:8: bad\n"}
{"Time":"2026-11-30T06:11:06.60809246Z","Action":"output","Package":"example.com/gk/u","Test":"TestBuild/D-U3_fail","Output":"--- FAIL: TestBuild/D-U3_fail (0.00s)\n"}
{"Time":"2026-11-30T06:11:06.608094763Z","Action":"fail","Package":"example.com/gk/u","Test":"TestBuild/D-U3_fail","Elapsed":0}
{"Time":"2026-11-30T06:11:06.608097187Z","Action":"output","Package":"example.com/gk/u","Test":"TestBuild","Output":"--- FAIL: TestBuild (0.00s)\n"}
{"Time":"2026-11-30T06:11:06.60809949Z","Action":"fail","Package":"example.com/gk/u","Test":"TestBuild","Elapsed":0}
{"Time":"2026-11-30T06:11:06.608101814Z","Action":"run","Package":"example.com/gk/u","Test":"TestSkipTop"}
{"Time":"2026-11-30T06:11:06.608103917Z","Action":"output","Package":"example.com/gk/u","Test":"TestSkipTop","Output":"=== RUN   TestSkipTop\n"}
{"Time":"2026-11-30T06:11:06.608106781Z","Action":"output","Package":"example.com/gk/u","Test":"TestSkipTop","Output":"    u_test.go:10: S-U1 not yet: reason\n"}
{"Time":"2026-11-30T06:11:06.608109265Z","Action":"output","Package":"example.com/gk/u","Test":"TestSkipTop","Output":"--- SKIP: TestSkipTop (0.00s)\n"}
{"Time":"2026-11-30T06:11:06.608111779Z","Action":"skip","Package":"example.com/gk/u","Test":"TestSkipTop","Elapsed":0}
{"Action":"run","Package":"example.com/gk/u","Test":"TestMulti/S-U14_two_workloads"}
{"Action":"output","Package":"example.com/gk/u","Test":"TestMulti/S-U14_two_workloads","Output":"=== RUN   TestMulti/S-U14_two_workloads\n"}
{"Action":"output","Package":"example.com/gk/u","Test":"TestMulti/S-U14_two_workloads","Output":"    multi_test.go:20: requires the\n"}
{"Action":"output","Package":"example.com/gk/u","Test":"TestMulti/S-U14_two_workloads","Output":"        events recorder\n"}
{"Action":"output","Package":"example.com/gk/u","Test":"TestMulti/S-U14_two_workloads","Output":"--- SKIP: TestMulti/S-U14_two_workloads (0.00s)\n"}
{"Action":"skip","Package":"example.com/gk/u","Test":"TestMulti/S-U14_two_workloads","Elapsed":0}
{"Action":"run","Package":"example.com/gk/u","Test":"TestMulti/S-U15_silent_skip"}
{"Action":"skip","Package":"example.com/gk/u","Test":"TestMulti/S-U15_silent_skip","Elapsed":0}
{"Action":"run","Package":"example.com/gk/u","Test":"TestRepeat/S-U16"}
{"Action":"pass","Package":"example.com/gk/u","Test":"TestRepeat/S-U16","Elapsed":0}
{"Action":"run","Package":"example.com/gk/u","Test":"TestRepeat/S-U16"}
{"Action":"output","Package":"example.com/gk/u","Test":"TestRepeat/S-U16","Output":"    repeat_test.go:5: flaked\n"}
{"Action":"fail","Package":"example.com/gk/u","Test":"TestRepeat/S-U16","Elapsed":0}
{"Action":"run","Package":"example.com/gk/u","Test":"TestHang/S-U17_hangs"}
{"Action":"output","Package":"example.com/gk/u","Output":"panic: test timed out after 10m0s\n"}
{"Time":"2026-11-30T06:11:06.608113932Z","Action":"output","Package":"example.com/gk/u","Output":"FAIL\n"}
{"Time":"2026-11-30T06:11:06.608173059Z","Action":"output","Package":"example.com/gk/u","Output":"FAIL\texample.com/gk/u\t0.003s\n"}
{"Time":"2026-11-30T06:11:06.608181151Z","Action":"fail","Package":"example.com/gk/u","Elapsed":0.004}

{"ImportPath":"example.com/gk/bf [example.com/gk/bf.test]","Action":"build-output","Output":"# example.com/gk/bf [example.com/gk/bf.test]\n"}
{"ImportPath":"example.com/gk/bf [example.com/gk/bf.test]","Action":"build-output","Output":"bf/bf_test.go:5:28: undefined: undefined\n"}
{"ImportPath":"example.com/gk/bf [example.com/gk/bf.test]","Action":"build-fail"}
{"Time":"2026-11-30T06:13:17.900512331Z","Action":"start","Package":"example.com/gk/bf"}
{"Time":"2026-11-30T06:13:17.900631739Z","Action":"output","Package":"example.com/gk/bf","Output":"FAIL\texample.com/gk/bf [build failed]\n"}
{"Time":"2026-11-30T06:13:17.900645048Z","Action":"fail","Package":"example.com/gk/bf","Elapsed":0,"FailedBuild":"example.com/gk/bf [example.com/gk/bf.test]"}
`

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func byName(results []TestResult) map[string]TestResult {
	m := map[string]TestResult{}
	for _, r := range results {
		m[r.Name] = r
	}
	return m
}

func loadPlan(t *testing.T) *Plan {
	t.Helper()
	p, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	return p
}
