// Package targets names the MCP implementations chaosrun puts under test,
// as an experiment's server.target and client.target spell them. The names
// are declared here once, in a package that imports nothing, so that the
// spec, the runner and the CLI can share them without pulling in the SDKs;
// the subpackages hold the implementations themselves.
package targets
