// Package recovery finds and finishes what a crash left behind before any
// command goes on: an unfinished apply (intent), a session whose process died
// (its work is recorded and the session marked interrupted), a stale overlay
// mount, leftover staging files. It also re-verifies a journal. It knows
// nothing about the CLI.
package recovery
