package spec

import (
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"

	"github.com/chaosrun/chaosrun/faults"
	"github.com/chaosrun/chaosrun/faults/trigger"
	"github.com/chaosrun/chaosrun/harness/balancer"
	"github.com/chaosrun/chaosrun/harness/check"
	"github.com/chaosrun/chaosrun/internal/dur"
	"github.com/chaosrun/chaosrun/targets"
	"github.com/chaosrun/chaosrun/targets/catalog"
	"github.com/chaosrun/chaosrun/targets/sdkclient"
	"github.com/chaosrun/chaosrun/targets/tools"
	"github.com/chaosrun/chaosrun/wire"
	"github.com/chaosrun/chaosrun/wire/mcp"
)

// The schema overlay: what the schema says that reflection over the types
// cannot see, written by hand. The types give the keys, their nesting and
// their JSON types; the overlay adds the rules the loader checks in code,
// where they are simple: a value from a list, a number within bounds, a
// field that must be written (its zero value is refused), a text pattern,
// and the shape of the one type that decodes itself (dur.Duration). Lists
// and bounds are the loader's own values wherever a package exports them.
// TestSchemaOverlayAgreesWithTheLoader tries every rule below against the
// loader: a value the rule refuses must be refused there too.

// rule is the overlay's word on one field.
type rule struct {
	required bool    // the field must be written: the loader refuses its zero value
	keywords jsonObj // added to the field's reflected schema
}

// typeRules are the overlay's rules of one Go type: per field, by its
// path of yaml names below the type ("backoff.retries"), and conditions
// between its fields.
type typeRules struct {
	fields map[string]rule
	allOf  []jsonObj
}

// Names of the overlay's shared definitions.
const (
	defDuration         = "duration"
	defPositiveDuration = "positive_duration"
	defFigureBound      = "figure_bound"
)

// durationPattern is a Go duration string as time.ParseDuration reads it,
// without a sign (dur.Parse refuses a negative one), or a bare 0.
const durationPattern = `^(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$`

// zeroDurationPattern is a duration string that is zero: "0s", "0m0s".
const zeroDurationPattern = `^(0|((0+(\.0*)?|\.0+)(ns|us|µs|μs|ms|s|m|h))+)$`

// figureBoundPattern is a figure bound as check.ParseBound reads it.
const figureBoundPattern = `^\s*(>=|<=|==|>|<)?\s*[0-9]+\s*$`

// overlayDefinitions are the shared schemas the overlay refers to.
func overlayDefinitions() jsonObj {
	return jsonObj{
		// A duration is written as a Go duration string ("90s", "4m",
		// "1h30m"), or as the integer 0 (dur.Duration's UnmarshalYAML).
		defDuration: jsonObj{
			"description": `a duration: "500ms", "90s", "4m", "1h30m"; 0 is zero`,
			"type":        []string{"string", "integer"}, "pattern": durationPattern, "minimum": 0, "maximum": 0,
		},
		defPositiveDuration: jsonObj{
			"description": `a duration greater than zero: "500ms", "90s", "4m", "1h30m"`,
			"type":        "string", "pattern": durationPattern, "not": jsonObj{"pattern": zeroDurationPattern},
		},
		// A figure bound is text (">=1") or a bare integer (0), which
		// yaml.v3 reads into the string check.ParseBound parses.
		defFigureBound: jsonObj{
			"description": `a bound on the figure: 0, ">=1", "<=5", ">0", "<2", "==4"`,
			"type":        []string{"string", "integer"}, "pattern": figureBoundPattern, "minimum": 0,
		},
	}
}

// yamlBool is what yaml.v3 decodes into a Go bool: true and false, and
// the YAML 1.1 words it still reads into a typed bool (proxy_buffering:
// off), which a YAML 1.2 reader takes for text.
var yamlBool = jsonObj{
	"description": "true or false (on/off, yes/no and y/n are read too)",
	"enum": []any{true, false, "y", "Y", "yes", "Yes", "YES", "on", "On", "ON",
		"n", "N", "no", "No", "NO", "off", "Off", "OFF"},
}

// selfDecoding are the schemas of the types that decode themselves
// (yaml.Unmarshaler), which reflection cannot look into.
var selfDecoding = map[reflect.Type]jsonObj{
	reflect.TypeFor[dur.Duration](): ref(defDuration),
}

// overlay returns the hand-written rules, by type: of the experiment's
// own blocks, of the faults and of the targets' options.
func overlay() map[reflect.Type]typeRules {
	out := experimentOverlay()
	maps.Copy(out, faultOverlay())
	maps.Copy(out, optionsOverlay())
	return out
}

// experimentOverlay are the rules validate.go and targets.go check of
// the experiment's own fields.
func experimentOverlay() map[reflect.Type]typeRules {
	return map[reflect.Type]typeRules{
		reflect.TypeFor[Experiment](): {fields: map[string]rule{
			"name":        matching(nameRE).mustWrite(),
			"description": matching(regexp.MustCompile(`\S`)).mustWrite(),
			"time_scale":  {keywords: jsonObj{"exclusiveMinimum": 0, "maximum": 10}},
			"workload":    {required: true},
			"expect":      {required: true},
		}},
		// replicas and clients of 0 take the default, 1.
		reflect.TypeFor[Server](): {fields: map[string]rule{
			"replicas": between(0, MaxReplicas),
			"tasks":    oneOfValues(TaskModes...),
		}},
		reflect.TypeFor[Client](): {fields: map[string]rule{
			"protocol": oneOfValues(Protocols()...),
			"tasks":    oneOfValues(TaskModes...),
		}},
		reflect.TypeFor[Balancer](): {
			fields: map[string]rule{
				"kind":               oneOfValues(balancerKinds...).mustWrite(),
				"balance":            oneOfValues(balancer.Methods...),
				"proxy_read_timeout": positiveDuration(),
				"keepalive_timeout":  positiveDuration(),
				"timeout_server":     positiveDuration(),
				"timeout_client":     positiveDuration(),
				"timeout_tunnel":     positiveDuration(),
			},
			allOf: []jsonObj{onlyFor("kind", balancer.Nginx, haproxyOnly), onlyFor("kind", balancer.HAProxy, nginxOnly),
				serviceOnly()},
		},
		reflect.TypeFor[Workload](): {fields: map[string]rule{
			"clients": between(0, MaxClients),
			"calls":   {required: true, keywords: jsonObj{"minItems": 1}},
		}},
		reflect.TypeFor[Call](): {
			fields: map[string]rule{
				"tool": matching(toolNameRE).mustWrite(),
				"key":  matching(keyRE),
			},
			allOf: builtInToolRules(),
		},
		reflect.TypeFor[Expect](): {fields: map[string]rule{
			"verdict":     oneOfValues(Verdicts...).mustWrite(),
			"violations":  {keywords: jsonObj{"items": jsonObj{"enum": check.InvariantIDs}}},
			"cannot_tell": {keywords: jsonObj{"items": jsonObj{"enum": check.InvariantIDs}}},
			"figures": {keywords: jsonObj{
				"propertyNames":        jsonObj{"enum": check.FigureNames},
				"additionalProperties": ref(defFigureBound),
			}},
		}},
	}
}

// faultOverlay are the rules the faults' Validate methods check: of the
// params of each kind, of repeat: and of when:.
func faultOverlay() map[reflect.Type]typeRules {
	stream := oneOfValues(faults.Upstream, faults.Downstream)
	process := map[string]rule{"role": oneOfValues(faults.Roles...).mustWrite(), "replica": atLeast(0)}
	return map[reflect.Type]typeRules{
		reflect.TypeFor[faults.Repeat](): {fields: map[string]rule{
			"count": between(1, faults.MaxRepeat).mustWrite(),
			"every": positiveDuration().mustWrite(),
		}},
		reflect.TypeFor[trigger.When](): {fields: map[string]rule{
			"event":      oneOfValues(trigger.Events...).mustWrite(),
			"edge":       oneOfValues(string(wire.EdgeServer), string(wire.EdgeClient)),
			"nth":        atLeast(0),
			"after_heal": atLeast(0),
		}},
		reflect.TypeFor[faults.IdleTimeout](): {fields: map[string]rule{
			"idle":  positiveDuration().mustWrite(),
			"close": oneOfValues(faults.CloseFIN, faults.CloseReset).mustWrite(),
		}},
		reflect.TypeFor[faults.Latency](): {fields: map[string]rule{
			"latency": positiveDuration().mustWrite(),
			"stream":  stream,
		}},
		reflect.TypeFor[faults.Bandwidth](): {fields: map[string]rule{"rate": atLeast(1).mustWrite(), "stream": stream}},
		reflect.TypeFor[faults.Slicer](): {fields: map[string]rule{
			"average_size":   atLeast(1).mustWrite(),
			"size_variation": atLeast(0),
			"stream":         stream,
		}},
		reflect.TypeFor[faults.LimitData](): {fields: map[string]rule{"bytes": atLeast(1).mustWrite(), "stream": stream}},
		reflect.TypeFor[faults.Partition](): {fields: map[string]rule{
			"for":  positiveDuration().mustWrite(),
			"mode": oneOfValues(faults.ModeRefuse, faults.ModeBlackhole).mustWrite(),
		}},
		reflect.TypeFor[faults.HTTPStatus](): {fields: map[string]rule{
			"status": between(400, 599).mustWrite(),
			"count":  atLeast(0),
		}},
		reflect.TypeFor[faults.Restart](): {fields: process},
		reflect.TypeFor[faults.Crash]():   {fields: process},
		reflect.TypeFor[faults.Pause]():   {fields: with(process, map[string]rule{"for": positiveDuration().mustWrite()})},
	}
}

// optionsOverlay are the rules the targets' options check (their
// Validate methods). Values the target packages keep to themselves are
// written out; the overlay test holds them to the loader.
func optionsOverlay() map[reflect.Type]typeRules {
	stores := oneOfValues("memory", "file", "redis")
	command := rule{required: true, keywords: jsonObj{"minItems": 1}}
	return map[reflect.Type]typeRules{
		serverOptionsType(targets.Reference): {fields: map[string]rule{
			"retention_events": atLeast(0),
			"on_unresumable":   oneOfValues("gone", "silent_head"),
			"event_store":      stores,
			"on_cancel":        oneOfValues(tools.OnCancelModes...),
			"task_store":       stores,
		}},
		serverOptionsType(targets.GoSDK):   {fields: map[string]rule{"retention_events": atLeast(0)}},
		serverOptionsType(targets.Command): {fields: map[string]rule{"command": command}},
		serverOptionsType(targets.Image): {fields: map[string]rule{
			"image": {required: true, keywords: jsonObj{"minLength": 1}},
		}},
		clientOptionsType(targets.Resumable): {fields: map[string]rule{
			"cursor":          oneOfValues("memory", "file"),
			"backoff.retries": between(0, 1000),
		}},
		clientOptionsType(targets.GoSDK):   {fields: map[string]rule{"backoff.retries": between(0, sdkclient.MaxRetries)}},
		clientOptionsType(targets.Command): {fields: map[string]rule{"command": command}},
	}
}

// with is a copy of rules with more.
func with(rules, more map[string]rule) map[string]rule {
	out := maps.Clone(rules)
	maps.Copy(out, more)
	return out
}

// targetOverlay are the rules of one target's settings where it takes
// fewer values than the options type it shares with another target, by
// the name of the target's definition ("client.naive").
func targetOverlay() map[string]map[string]rule {
	return map[string]map[string]rule{
		// The naive client keeps no cursor: the file cursor is the
		// resumable client's.
		clientBlock.key + "." + targets.Naive: {"cursor": oneOfValues("memory")},
	}
}

// builtInToolRules are the rules of the built-in tools' calls: a positive
// duration, and the arguments the tool takes (toolArgs), with the counts
// validateWorkload requires.
func builtInToolRules() []jsonObj {
	required := map[string]jsonObj{
		mcp.ToolCharge: {"amount_cents": jsonObj{"type": "integer", "minimum": 1}},
		mcp.ToolChatty: {"events": jsonObj{"type": "integer", "minimum": 1, "maximum": 1_000_000}},
	}
	var out []jsonObj
	for _, tool := range Tools {
		props := jsonObj{}
		var names []string
		for _, a := range toolArgs[tool] {
			props[a] = jsonObj{}
		}
		for _, a := range slices.Sorted(maps.Keys(required[tool])) {
			props[a] = required[tool][a]
			names = append(names, a)
		}
		out = append(out, jsonObj{
			"if": jsonObj{"properties": jsonObj{"tool": jsonObj{"const": tool}}, "required": []string{"tool"}},
			"then": jsonObj{
				"properties": jsonObj{
					"duration": ref(defPositiveDuration),
					"args":     jsonObj{"properties": props, "required": names, "additionalProperties": false},
				},
				"required": []string{"duration", "args"},
			},
		})
	}
	return out
}

// onlyFor forbids the fields other unless key is value: the settings of
// one kind of balancer given another.
func onlyFor(key, value string, other []string) jsonObj {
	forbidden := jsonObj{}
	for _, f := range other {
		forbidden[f] = false
	}
	return jsonObj{
		"if":   jsonObj{"properties": jsonObj{key: jsonObj{"const": value}}, "required": []string{key}},
		"then": jsonObj{"properties": forbidden},
	}
}

// serviceOnly forbids every nginx and HAProxy setting to a balancer of
// kind service, and limits its balance to what a Service does.
func serviceOnly() jsonObj {
	o := onlyFor("kind", balancer.Service, append(slices.Clone(nginxOnly), haproxyOnly...))
	o["then"].(jsonObj)["properties"].(jsonObj)["balance"] = jsonObj{"enum": balancer.ServiceMethods}
	return o
}

func oneOfValues(values ...string) rule { return rule{keywords: jsonObj{"enum": values}} }

func between(lo, hi int) rule { return rule{keywords: jsonObj{"minimum": lo, "maximum": hi}} }

func atLeast(lo int) rule { return rule{keywords: jsonObj{"minimum": lo}} }

func matching(re *regexp.Regexp) rule { return rule{keywords: jsonObj{"pattern": re.String()}} }

// positiveDuration replaces a duration's schema: the loader refuses 0.
func positiveDuration() rule { return rule{keywords: ref(defPositiveDuration)} }

func (r rule) mustWrite() rule { r.required = true; return r }

// apply adds the rule's keywords to s, a field's reflected schema. A
// reference is replaced by a reference, and otherwise kept beside the
// keywords (draft-07 ignores the siblings of $ref).
func (r rule) apply(s jsonObj) jsonObj {
	switch {
	case len(r.keywords) == 0:
		return s
	case r.keywords["$ref"] != nil:
		return maps.Clone(r.keywords)
	case s["$ref"] != nil:
		s = jsonObj{"allOf": []any{s}}
	}
	for k, v := range r.keywords {
		s[k] = v
	}
	return s
}

func ref(def string) jsonObj { return jsonObj{"$ref": "#/definitions/" + def} }

// serverOptionsType and clientOptionsType are the options types of the
// targets named, as the catalogue gives them (each a pointer to a struct).
func serverOptionsType(name string) reflect.Type {
	s, ok := catalog.Server(name)
	if !ok {
		panic(fmt.Sprintf("schema overlay: no server target %s", name))
	}
	return reflect.TypeOf(s.Options()).Elem()
}

func clientOptionsType(name string) reflect.Type {
	c, ok := catalog.Client(name)
	if !ok {
		panic(fmt.Sprintf("schema overlay: no client target %s", name))
	}
	return reflect.TypeOf(c.Options()).Elem()
}
