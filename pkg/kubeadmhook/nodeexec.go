package kubeadmhook

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// DefaultNodeExec reaches a kind node: its container has the node's name.
const DefaultNodeExec = "docker exec -i {node}"

// NodeExec runs shell commands on a cluster node: Template with {node}
// replaced by the node's name, then `sh -c SCRIPT`, so that one template
// serves kind ("docker exec -i {node}") and any kubeadm cluster reached by
// ssh ("ssh -o BatchMode=yes root@{node}"). The script's stdin is the
// command's stdin.
type NodeExec struct{ Template string }

// Run runs script on node as root and returns its stdout.
func (n NodeExec) Run(ctx context.Context, node, script string, stdin []byte) ([]byte, error) {
	tmpl := n.Template
	if tmpl == "" {
		tmpl = DefaultNodeExec
	}
	if !strings.Contains(tmpl, "{node}") {
		return nil, fmt.Errorf("node-exec template %q has no {node}", tmpl)
	}
	// The script goes to the remote sh as one quoted word: docker exec and
	// ssh both pass their trailing words to a shell or exec them.
	cmdline := strings.ReplaceAll(tmpl, "{node}", shellQuote(node)) + " sh -c " + shellQuote(script)
	cmd := exec.CommandContext(ctx, "sh", "-c", cmdline)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), fmt.Errorf("on node %s (%s): %q: %w: %s", node, tmpl, script, err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
