package spec

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// yaml.v3's messages, said in plain words with their lines once.

// leadRE is the position yaml.v3 puts before a message.
var leadRE = regexp.MustCompile(`^(?:yaml: )?(?:line \d+(?: column \d+)?: ?)?`)

// stripPosition drops the leading "yaml: line N:" of a message, which the
// problem's own location says already.
func stripPosition(msg string) string {
	return strings.TrimLeft(leadRE.ReplaceAllString(msg, ""), ": ")
}

// syntaxProblem turns a yaml.v3 syntax error into a line and a message. The
// parser's errors (the "did not find expected ..." family) count lines from
// 0, unlike its scanner's and everything else in yaml.v3: their line is one
// more than the message says.
func syntaxProblem(msg string) (int, string) {
	line, _ := position(msg)
	msg = stripPosition(msg)
	if line > 0 && strings.HasPrefix(msg, "did not find expected ") && !strings.Contains(msg, "character") {
		line++
	}
	return line, "YAML syntax: " + msg
}

var (
	dupKeyRE    = regexp.MustCompile(`^mapping key "(.*)" already defined at line (\d+)$`)
	unmarshalRE = regexp.MustCompile("^cannot unmarshal !!(\\w+)(?: `(.*)`)? into (\\S+)$")
)

// plainTypeError says a yaml.v3 decode error in plain words: a duplicate key
// with the lines of both, a type mismatch as what was expected and what the
// file has. line is where the problem is; other messages pass unchanged.
func plainTypeError(line int, msg string) string {
	if m := dupKeyRE.FindStringSubmatch(msg); m != nil {
		first, _ := strconv.Atoi(m[2])
		return fmt.Sprintf("the key %q appears twice, at line %d and again at line %d", m[1], first, line)
	}
	if m := unmarshalRE.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("expected %s, got %s", goTypeWords(m[3]), yamlValueWords(m[1], m[2]))
	}
	return msg
}

func goTypeWords(t string) string {
	switch {
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map["), strings.Contains(t, "."):
		return "a mapping"
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return "an integer"
	case strings.HasPrefix(t, "float"):
		return "a number"
	case t == "bool":
		return "true or false"
	case t == "string":
		return "text"
	}
	return "a value of type " + t
}

func yamlValueWords(tag, value string) string {
	words := map[string]string{"str": "the text", "int": "the integer", "float": "the number", "bool": "the value",
		"null": "nothing", "seq": "a list", "map": "a mapping", "timestamp": "the time"}
	w, ok := words[tag]
	if !ok {
		w = "a value tagged !!" + tag
	}
	if value == "" {
		return w
	}
	return w + " `" + value + "`"
}
