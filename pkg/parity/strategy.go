package parity

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// Namespace label and annotation the parity binary puts on each spec's
// namespace: the spec's full text, and in gang mode whether the intent
// policy may rewrite the strategy of what the spec creates there
// (fixtures/parity/gang.yaml reads the label).
const (
	SpecAnnotation = "parity.was-harness.io/spec"
	StrategyLabel  = "parity.was-harness.io/strategy"
	// StrategyRewrite lets the policy rewrite the strategy to one that
	// allows gang; StrategyAsWritten keeps the spec's.
	StrategyRewrite   = "rewrite"
	StrategyAsWritten = "as-written"
	// RewrittenFromAnnotation: the gang policy's record, on an object whose
	// strategy it rewrote, of the strategy the spec wrote.
	RewrittenFromAnnotation = "parity.was-harness.io/rewritten-from"
)

// StrategyRule names specs whose claim depends on the strategy they set,
// and why: the gang mode leaves their strategy as written.
type StrategyRule struct {
	Spec   *regexp.Regexp
	Reason string
}

// LoadStrategyRules reads hack/parity/strategy-dependent.txt: one rule per
// line, "REGEX # reason"; blank lines and lines starting with # are skipped.
func LoadStrategyRules(path string) ([]StrategyRule, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var rules []StrategyRule
	s := bufio.NewScanner(f)
	for n := 1; s.Scan(); n++ {
		line := strings.TrimSpace(s.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		expr, reason, ok := strings.Cut(line, " # ")
		if !ok || strings.TrimSpace(reason) == "" {
			return nil, fmt.Errorf("%s:%d: want \"REGEX # reason\", got %q", path, n, line)
		}
		re, err := regexp.Compile(strings.TrimSpace(expr))
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		rules = append(rules, StrategyRule{Spec: re, Reason: strings.TrimSpace(reason)})
	}
	return rules, s.Err()
}

// DependsOnStrategy returns the reason the spec keeps its strategy, if a
// rule names it.
func DependsOnStrategy(rules []StrategyRule, spec string) (string, bool) {
	for _, r := range rules {
		if r.Spec.MatchString(spec) {
			return r.Reason, true
		}
	}
	return "", false
}

// KEPRule names a spec that fails with intent because a KEP says so, the
// failure (by field and type) that shows it, and the KEP's sentence.
type KEPRule struct {
	Spec, Failure *regexp.Regexp
	Quote         string
}

// LoadKEPRules reads hack/parity/kep-requires.txt: one rule per line,
// "SPEC-REGEX # FAILURE-REGEX # the KEP's sentence".
func LoadKEPRules(path string) ([]KEPRule, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rules []KEPRule
	for n, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.SplitN(line, " # ", 3)
		if len(parts) != 3 || strings.TrimSpace(parts[2]) == "" {
			return nil, fmt.Errorf("%s:%d: want \"SPEC-REGEX # FAILURE-REGEX # the KEP's sentence\", got %q", path, n+1, line)
		}
		spec, err := regexp.Compile(strings.TrimSpace(parts[0]))
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n+1, err)
		}
		failure, err := regexp.Compile(strings.TrimSpace(parts[1]))
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n+1, err)
		}
		rules = append(rules, KEPRule{Spec: spec, Failure: failure, Quote: strings.TrimSpace(parts[2])})
	}
	return rules, nil
}

// RequiredByKEP returns the KEP sentence when a spec's failure with intent
// is the one a rule names.
func RequiredByKEP(rules []KEPRule, spec, failure string) (string, bool) {
	for _, r := range rules {
		if r.Spec.MatchString(spec) && r.Failure.MatchString(failure) {
			return r.Quote, true
		}
	}
	return "", false
}
