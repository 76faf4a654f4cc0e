// Package spec loads and validates experiment files.
//
// An experiment file is strict YAML: an unknown key is an error, and every
// error names the file, line, column and field, so a typo never silently
// turns into a default. Durations are written at real-world scale ("60s",
// "4m") and multiplied by time_scale when the experiment is planned, so a
// four-minute partition runs in seconds. The schema is [Experiment]; the
// fields it leaves out take the defaults listed on each type.
//
// Faults are decoded and validated here, once: an experiment that loads
// holds each fault as a faults.Spec, its params: mapping in its kind's
// params struct, and nothing downstream checks them again. So are the
// targets' settings: every key of the server: and client: blocks besides
// the experiment's own (target, replicas, tasks, protocol) decodes into the
// options type the target declares (package targets/catalog), and a key
// another target takes is refused in the words the targets give. What
// spans parts is checked here by asking them: the faults say what they act
// on (faults.Targeted, faults.Controlled), the targets what they speak and
// need (targets.Server, targets.Needer), a runtime what it runs
// (agent.Capabilities, CheckRuntime).
//
// [Schema] is the JSON Schema of experiment files, for editors: generated
// from the same types, walked as the loader walks them, with a small
// hand-written overlay for what the types cannot say (schema_overlay.go).
package spec
