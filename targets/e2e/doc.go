// Package e2e holds end-to-end tests of the client targets against the
// reference server on loopback, with an in-process Toxiproxy proxy between
// them cutting connections mid-call. They check the incident's two failure
// modes from the outside: the ledger counts charges, the clients' history
// shows what each client saw and concluded.
//
// The package has no code of its own; everything is in its _test.go files.
package e2e
