package crashpoint

import (
	"fmt"
	"net/http"
	"os"
	"strings"
)

// WrapTransport counts, for an armed write point, the writes sent through
// rt (api/crashpoint.WritePrefix says which count), and exits right after the
// armed one's answer arrived, before its caller sees it: the write is in the
// apiserver, and nothing the controller would do next is. With a write point
// armed each counted write is also logged, so the crash's log says what the
// writes before it were. Wrap every client of the process with it
// (rest.Config.Wrap): a write sent around it is not counted.
func WrapTransport(rt http.RoundTripper) http.RoundTripper { return writeCounter{next: rt} }

type writeCounter struct{ next http.RoundTripper }

func (w writeCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := w.next.RoundTrip(req)
	if err != nil || resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp, err
	}
	if ns, what, ok := countedWrite(req.Method, req.URL.Path); ok {
		countWrite(ns, what)
	}
	return resp, err
}

// countWrite counts one write in ns when a write point is armed for it, and
// exits when it is the armed one.
func countWrite(ns, what string) {
	mu.Lock()
	ordinal, write := armed.WriteOrdinal()
	if !write || (namespace != "" && namespace != ns) || writes >= ordinal {
		mu.Unlock()
		return
	}
	writes++
	n, p, reached := writes, armed, spec
	// Held to the exit when n is the armed write: a concurrent write's
	// answer must not be counted (or logged) after it.
	if n < ordinal {
		mu.Unlock()
	}
	fmt.Fprintf(os.Stderr, "crashpoint: write %d of the %d armed (namespace %s): %s\n", n, ordinal, ns, what)
	if n == ordinal {
		exitAt(p, ns, reached, what)
		mu.Unlock() // only when exit returns (tests)
	}
}

// writeVerbs maps the methods that write to the verbs they are.
var writeVerbs = map[string]string{
	http.MethodPost: "create", http.MethodPut: "update", http.MethodPatch: "patch", http.MethodDelete: "delete",
}

// countedWrite says whether a request is a counted write and, if so, its
// namespace and what it wrote ("create pods", "patch replicasets/web-5d8",
// "delete podgroups/web-5d8"). Paths are /api/v1/namespaces/<ns>/<resource>[/<name>[/<subresource>]]
// and /apis/<group>/<version>/namespaces/<ns>/... .
func countedWrite(method, path string) (ns, what string, ok bool) {
	verb, writes := writeVerbs[method]
	if !writes {
		return "", "", false
	}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var rest []string
	switch {
	case len(parts) >= 3 && parts[0] == "api" && parts[2] == "namespaces":
		rest = parts[3:]
	case len(parts) >= 4 && parts[0] == "apis" && parts[3] == "namespaces":
		rest = parts[4:]
	default:
		return "", "", false // cluster-scoped, or not the API
	}
	// rest: <ns> <resource> [<name> [<subresource>]]; a write of the
	// Namespace object itself (no resource) is not a write in it.
	if len(rest) < 2 || len(rest) > 4 || rest[1] == "events" || (len(rest) == 4 && rest[3] == "status") {
		return "", "", false
	}
	return rest[0], verb + " " + strings.Join(rest[1:], "/"), true
}
