// Package sdksuite holds no code: its tests are the one suite the real-SDK
// adapters (targets/gosdk, targets/mcpgo) run, as one checker runs over
// many models.
//
// The suite is a table of implementations (sdks_test.go): each entry
// starts an SDK's server and runs its client through the constructors its
// package exports, and states, as data, where that SDK behaves otherwise
// than another and why (the behaviour notes of its package and
// docs/sdk-behaviour.md). Every test function runs against every entry, or
// every entry with the capability it needs; a test derives what it expects
// from the entries' behaviour, so a difference between the SDKs is a field
// of the table, never a second copy of a test. The client tests run each
// SDK's client against every server the suite knows: the SDKs' and the
// reference server. The *_CurrentBehaviour tests pin what an SDK does
// today, so that a new SDK version that changes it fails a test; a few pin
// what only one SDK has (go-sdk's stateless 2026-07-28 server, mcp-go's
// 2025-11-25 tasks) and are named for it.
//
// Adding an SDK is adding an entry: its package exports NewServer and
// RunClient, and the entry says how the SDK behaves where the table asks.
package sdksuite
