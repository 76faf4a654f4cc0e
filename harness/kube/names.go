package kube

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
)

// Labels and annotations on what the runtime creates. The label keys are
// the docker runtime's, so one selector finds chaosrun's objects anywhere.
const (
	LabelManaged    = "chaosrun"
	LabelRun        = "chaosrun.run"
	LabelExperiment = "chaosrun.experiment"
	LabelRole       = "chaosrun.role"
	// LabelAgent names the agent a pod runs (its role, or role-N), and is
	// the selector of the agent's Service.
	LabelAgent = "chaosrun.agent"

	// On the namespace, for Clean: where the experiment's folders are.
	AnnotationNode      = "chaosrun.node"
	AnnotationStateRoot = "chaosrun.state-root"
	AnnotationImage     = "chaosrun.image"
)

// namespaceName is "chaosrun-<experiment>-<random>", a DNS label.
func namespaceName(experiment, random string) string {
	return "chaosrun-" + nameFragment(experiment, 63-len("chaosrun--")-len(random)) + "-" + random
}

// nameFragment makes s a part of a DNS label (RFC 1123: lower-case letters,
// digits and '-', starting and ending with a letter or digit) of at most
// max characters; "experiment" when nothing of s is left.
func nameFragment(s string, max int) string {
	b := []byte(strings.ToLower(s))
	for i, c := range b {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			b[i] = '-'
		}
	}
	out := strings.Trim(string(b), "-")
	for strings.Contains(out, "--") {
		out = strings.ReplaceAll(out, "--", "-")
	}
	if len(out) > max {
		out = strings.TrimRight(out[:max], "-")
	}
	if out == "" {
		return "experiment"
	}
	return out
}

// labelValue makes s a label value: at most 63 characters of letters,
// digits, '-', '_' and '.', starting and ending with a letter or digit.
func labelValue(s string) string {
	b := []byte(s)
	for i, c := range b {
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '-' && c != '_' && c != '.' {
			b[i] = '-'
		}
	}
	out := string(b)
	if len(out) > 63 {
		out = out[:63]
	}
	return strings.Trim(out, "-_.")
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}
