package parity

import (
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

// readRules reads a rule file of hack/parity: one rule per line, fields
// separated by " # ", the first n-1 of them regular expressions and the
// last text; blank lines and lines starting with # are skipped.
func readRules(path string, n int, want string, each func(res []*regexp.Regexp, text string)) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.SplitN(line, " # ", n)
		if len(parts) != n || strings.TrimSpace(parts[n-1]) == "" {
			return fmt.Errorf("%s:%d: want %q, got %q", path, i+1, want, line)
		}
		res := make([]*regexp.Regexp, n-1)
		for j := range res {
			if res[j], err = regexp.Compile(strings.TrimSpace(parts[j])); err != nil {
				return fmt.Errorf("%s:%d: %w", path, i+1, err)
			}
		}
		each(res, strings.TrimSpace(parts[n-1]))
	}
	return nil
}

// LoadStrategyRules reads hack/parity/strategy-dependent.txt: "REGEX # reason".
func LoadStrategyRules(path string) ([]StrategyRule, error) {
	var rules []StrategyRule
	err := readRules(path, 2, "REGEX # reason", func(res []*regexp.Regexp, reason string) {
		rules = append(rules, StrategyRule{Spec: res[0], Reason: reason})
	})
	return rules, err
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

// LoadKEPRules reads hack/parity/kep-requires.txt:
// "SPEC-REGEX # FAILURE-REGEX # the KEP's sentence".
func LoadKEPRules(path string) ([]KEPRule, error) {
	var rules []KEPRule
	err := readRules(path, 3, "SPEC-REGEX # FAILURE-REGEX # the KEP's sentence", func(res []*regexp.Regexp, quote string) {
		rules = append(rules, KEPRule{Spec: res[0], Failure: res[1], Quote: quote})
	})
	return rules, err
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
