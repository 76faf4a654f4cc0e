// Package targets names the MCP implementations chaosrun puts under test,
// as an experiment's server.target and client.target spell them, and
// declares how a target describes itself (Server, Client): its options
// type with their defaults, the revisions and task modes it speaks, its
// tools and control actions, and what its options need of a run (Needer,
// Commanded, Imaged). The package imports nothing, so that anything may
// share the names and the description types; the subpackages hold the
// implementations, each exporting its options type and its description,
// and targets/catalog lists them all.
//
// A target's options are data, like a fault's params: an exported struct
// whose yaml and json tags are the schema of its server: or client: block,
// durations as dur.Duration at real-world scale, with Validate (problems
// as field errors naming the setting) and Scaled (the copy at run scale).
// The experiment loader decodes a block into them strictly and validates
// them once; the runner hands them, at run scale, to the agent that runs
// the target in its configuration file, which decodes them into the same
// type.
package targets
