// Command testplan-report maps test results onto the KEP-6276/KEP-6277 test
// plan and writes the conformance report (testplan.md and testplan.html);
// its other subcommands keep the inputs honest.
//
//	testplan-report [report] [flags]   the report (see report.go)
//	testplan-report verify [flags]     every plan id has a spec or a unit test (make verify; verify.go)
//	testplan-report stamp [flags]      record which source tree and run wrote unit.json (make test) or junit_e2e.xml (hack/e2e.sh); stamp.go
//	testplan-report source-id          print the id of the source tree in the current directory
//
// Exit status: 0 on success, 1 when the check failed (an id with a status
// listed in --fail-on, an id without a test), 2 on usage or input errors.
package main

import (
	"fmt"
	"os"
	"strings"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	cmd := "report"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "report":
		return reportCmd(args)
	case "verify":
		return verifyCmd(args)
	case "stamp":
		return stampCmd(args)
	case "source-id":
		return sourceIDCmd(args)
	}
	fmt.Fprintf(os.Stderr, "testplan-report: unknown command %q (want report, verify, stamp or source-id)\n", cmd)
	return 2
}

// fail prints an error in the command's name and returns exit status 2.
func fail(format string, args ...any) int {
	fmt.Fprintf(os.Stderr, "testplan-report: "+format+"\n", args...)
	return 2
}
