// Package scripts holds the tests of the shell scripts beside it: the Go
// toolchain runs them with the rest of the module's tests.
package scripts
